"""Scores a prompt file without an LLM: the placeholder must stay, and each of a few
instructions a careful prompt gives earns a quarter point."""
import os

WANTED = ("sentiment", "one word", "positive", "step by step")


def evaluate(prompt_path):
    with open(prompt_path, encoding="utf-8") as fh:
        prompt = fh.read()
    if "{input_text}" not in prompt:
        return {"combined_score": 0.0, "prompt_length": len(prompt)}
    low = prompt.lower()
    score = sum(0.25 for w in WANTED if w in low)
    return {"combined_score": score, "prompt_length": len(prompt),
            "name_ok": float(os.path.basename(prompt_path) == "initial_prompt.txt")}
