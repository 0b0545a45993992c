// A C++ program evolved by basevolve's tests (issue 31): print distinct numbers in 1..=10.
#include <iostream>
#include <vector>

// EVOLVE-BLOCK-START
std::vector<int> choose() {
    return {1, 2};
}
// EVOLVE-BLOCK-END

int main() {
    for (int x : choose()) std::cout << x << " ";
    std::cout << std::endl;
    return 0;
}
