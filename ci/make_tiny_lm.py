#!/usr/bin/env python3
"""Writes the offline assets that scenarios/thirdparty/trl_*.toml train on: a tiny GPT-2
(2 layers, 32-wide, random weights from a fixed seed) with a word-level tokenizer trained
here, and a 400-line JSON-lines text dataset. The program under test is TRL's own
`trl.scripts.sft` as its wheel ships it; these are only its inputs, built from nothing so
that no run touches a network (HF_HUB_OFFLINE=1). Run by ci/install-deps.sh:
    python ci/make_tiny_lm.py DIR      ->  DIR/model/, DIR/data/train.jsonl
Deterministic: the same DIR contents every time. Writes into DIR.tmp, then renames, so a
half-written DIR never exists."""
import json
import os
import shutil
import sys


def main(out: str) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
    import torch

    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    words = "the quick brown fox jumps over the lazy dog while ranks wait in allreduce".split()
    texts = [" ".join(words[(i * 7 + j) % len(words)] for j in range(12 + i % 5)) for i in range(400)]
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]", "[EOS]"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")
    fast.save_pretrained(os.path.join(tmp, "model"))
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=len(fast), n_positions=64, n_embd=32, n_layer=2, n_head=2,
                     bos_token_id=fast.eos_token_id, eos_token_id=fast.eos_token_id,
                     pad_token_id=fast.pad_token_id)
    GPT2LMHeadModel(cfg).save_pretrained(os.path.join(tmp, "model"))
    os.makedirs(os.path.join(tmp, "data"))
    with open(os.path.join(tmp, "data", "train.jsonl"), "w") as f:
        for t in texts:
            f.write(json.dumps({"text": t}) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_tiny_lm.py DIR")
    main(sys.argv[1])
