// A Rust program evolved by basevolve's tests (issue 31): print distinct numbers in 1..=10.
// EVOLVE-BLOCK-START
fn choose() -> Vec<u32> {
    vec![1, 2, 3]
}
// EVOLVE-BLOCK-END

fn main() {
    let picked: Vec<String> = choose().iter().map(|x| x.to_string()).collect();
    println!("{}", picked.join(" "));
}
