"""Speculative decoding on Hugging Face models: spectheory against HF ``generate`` and HF
assisted generation, as time ratios in one run (issue 14).

Random-weight GPT-2 models are built here (nothing is downloaded): a target of 8 blocks and
two drafts of 1 block, greedy decoding, batch 1, 100 new tokens, gamma = 4 for both speculative
decoders (HF's assistant set to ``num_assistant_tokens=4``, the ``constant`` schedule and no
early stop on low confidence, ``assistant_confidence_threshold=0``: equal settings). The *agreeing*
draft is the target's own first block (the target's later blocks have zero output
projections, so it computes exactly what its first block computes: acceptance 1, the best
case of a cheap draft); the *unrelated* draft is an independent random block (acceptance
about 0: the worst case). Every greedy output is checked to be identical token for token
across the four decoders. A ragged batch of 8 prompts (lengths 8..64) compares one batched
spectheory call with a loop over the prompts.

Times are medians over repeats on a shared machine (noisy); ratios < 1 mean spectheory is
faster. Writes ``hf_speed.json``.

Usage: python benchmarks/hf_speed.py [--quick] [--out DIR] [--threads N]
"""

from __future__ import annotations

import copy
import statistics
import time

import numpy as np
import torch
import transformers

from spectheory.app.results import headline, script_parser, write_results
from spectheory.decoder import HFCausalLM, autoregressive_generate
from spectheory.decoder.hf_generate import hf_speculative_generate

GAMMA = 4


def build(quick: bool, seed: int = 0):
    """The target, the agreeing draft (its first block) and an unrelated draft, float32, eval."""
    width, layers, vocab = (64, 3, 512) if quick else (512, 8, 8192)
    config = transformers.GPT2Config(
        n_layer=layers,
        n_embd=width,
        n_head=8,
        vocab_size=vocab,
        n_positions=512,
        tie_word_embeddings=False,
        pad_token_id=0,
    )
    torch.manual_seed(seed)
    target = transformers.GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        for block in target.transformer.h[1:]:  # later blocks add nothing to the residual stream
            for proj in (block.attn.c_proj, block.mlp.c_proj):
                proj.weight.zero_()
                proj.bias.zero_()
        target.lm_head.weight.mul_(8.0)  # peaked laws: clear greedy winners
    agreeing = copy.deepcopy(target)
    agreeing.transformer.h = agreeing.transformer.h[:1]
    agreeing.config.n_layer = 1
    torch.manual_seed(seed + 1)
    unrelated = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(**{**config.to_dict(), "n_layer": 1})
    ).eval()
    return target, {"agreeing": agreeing, "unrelated": unrelated}


def timed(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), out


def single_prompt(target, draft, prompt, n_new, repeats):
    ids = torch.tensor([prompt])
    mask = torch.ones_like(ids)
    wrapped_t, wrapped_d = HFCausalLM(target), HFCausalLM(draft)
    hf_kw = dict(
        attention_mask=mask, max_new_tokens=n_new, min_new_tokens=n_new, do_sample=False, pad_token_id=0
    )

    def hf_generate():
        with torch.no_grad():
            return target.generate(ids, **hf_kw)[0, len(prompt) :].tolist()

    # equal settings: HF's assistant drafts exactly GAMMA tokens per round (constant schedule) and does
    # not stop early on low confidence (its default assistant_confidence_threshold would)
    draft.generation_config.num_assistant_tokens = GAMMA
    draft.generation_config.num_assistant_tokens_schedule = "constant"
    draft.generation_config.assistant_confidence_threshold = 0.0

    def hf_assisted():
        with torch.no_grad():
            return target.generate(
                ids,
                assistant_model=draft,
                num_assistant_tokens=GAMMA,
                num_assistant_tokens_schedule="constant",
                **hf_kw,
            )[0, len(prompt) :].tolist()

    def st_speculative():
        return hf_speculative_generate(
            wrapped_t, wrapped_d, ids, n_new, GAMMA, do_sample=False, eos_token_id=None
        )

    def st_autoregressive():
        return autoregressive_generate(wrapped_t, [prompt], n_new, temperature=0).tokens[0].tolist()

    runs = {}
    for name, fn in [
        ("hf_generate", hf_generate),
        ("hf_assisted", hf_assisted),
        ("spectheory_speculative", st_speculative),
        ("spectheory_autoregressive", st_autoregressive),
    ]:
        if repeats > 1:
            fn()  # warm-up (full mode)
        runs[name] = timed(fn, repeats)
    spec = runs["spectheory_speculative"][2]
    outputs = {
        k: (v[2].tokens[0].tolist() if k == "spectheory_speculative" else v[2]) for k, v in runs.items()
    }
    identical = len({tuple(o) for o in outputs.values()}) == 1
    t = {k: v[0] for k, v in runs.items()}
    return {
        "seconds_median": t,
        "seconds_min": {k: v[1] for k, v in runs.items()},
        "acceptance": spec.stats.totals()["acceptance"],
        "identical_outputs": identical,
        "ratio_speculative_vs_assisted": t["spectheory_speculative"] / t["hf_assisted"],
        "ratio_speculative_vs_generate": t["spectheory_speculative"] / t["hf_generate"],
        "ratio_autoregressive_vs_generate": t["spectheory_autoregressive"] / t["hf_generate"],
        "ratio_assisted_vs_generate": t["hf_assisted"] / t["hf_generate"],
    }


def ragged(target, draft, n_new, repeats, quick):
    gen = np.random.default_rng(3)
    lengths = np.linspace(8, 24 if quick else 64, 8).astype(int)
    prompts = [gen.integers(1, target.config.vocab_size, size=n).tolist() for n in lengths]
    ids = torch.zeros(len(prompts), int(lengths.max()), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for b, p in enumerate(prompts):
        ids[b, : len(p)], mask[b, : len(p)] = torch.tensor(p), 1
    wt, wd = HFCausalLM(target), HFCausalLM(draft)

    def batched():
        return hf_speculative_generate(
            wt, wd, ids, n_new, GAMMA, attention_mask=mask, do_sample=False, eos_token_id=None
        ).tokens

    def loop():
        return [
            hf_speculative_generate(
                wt, wd, torch.tensor([p]), n_new, GAMMA, do_sample=False, eos_token_id=None
            ).tokens[0]
            for p in prompts
        ]

    if repeats > 1:
        batched(), loop()
    tb, _, out_b = timed(batched, repeats)
    tl, _, out_l = timed(loop, repeats)
    same = all(np.array_equal(a, b) for a, b in zip(out_b, out_l))
    return {
        "prompt_lengths": lengths.tolist(),
        "seconds_batched": tb,
        "seconds_loop": tl,
        "ratio_batched_vs_loop": tb / tl,
        "identical_outputs": same,
    }


def main(argv=None):
    ap = script_parser(__doc__)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()
    n_new, repeats = (24, 1) if args.quick else (100, 3)
    target, drafts = build(args.quick)
    prompt = np.random.default_rng(1).integers(1, target.config.vocab_size, size=16).tolist()
    data = {
        "gamma": GAMMA,
        "new_tokens": n_new,
        "repeats": repeats,
        "threads": args.threads,
        "target": {
            "n_layer": target.config.n_layer,
            "n_embd": target.config.n_embd,
            "vocab_size": target.config.vocab_size,
        },
        "single": {},
    }
    rows = []
    for name, draft in drafts.items():
        r = single_prompt(target, draft, prompt, n_new, repeats)
        data["single"][name] = r
        print(
            f"draft {name}: acceptance {r['acceptance']:.2f}, identical outputs {r['identical_outputs']}; "
            + ", ".join(f"{k} {v:.3f} s" for k, v in r["seconds_median"].items())
        )
        rows += [
            headline(
                f"HF speed, {name} draft: spectheory speculative / HF assisted (time)",
                r["ratio_speculative_vs_assisted"],
                note=f"greedy, gamma {GAMMA}, {n_new} tokens, "
                f"acceptance {r['acceptance']:.2f}; < 1 = spectheory faster",
            ),
            headline(
                f"HF speed, {name} draft: spectheory speculative / HF generate (time)",
                r["ratio_speculative_vs_generate"],
            ),
            headline(
                f"HF speed, {name} draft: HF assisted / HF generate (time)", r["ratio_assisted_vs_generate"]
            ),
        ]
    r = data["single"]["agreeing"]
    rows.append(
        headline(
            "HF speed: spectheory autoregressive / HF generate (time)", r["ratio_autoregressive_vs_generate"]
        )
    )
    data["ragged"] = ragged(target, drafts["agreeing"], n_new, repeats, args.quick)
    print(
        f"ragged batch of 8: batched {data['ragged']['seconds_batched']:.3f} s, loop "
        f"{data['ragged']['seconds_loop']:.3f} s, identical {data['ragged']['identical_outputs']}"
    )
    rows.append(
        headline(
            "HF speed: ragged batch of 8, one spectheory call / per-prompt loop (time)",
            data["ragged"]["ratio_batched_vs_loop"],
            note="agreeing draft",
        )
    )
    ok = all(v["identical_outputs"] for v in data["single"].values()) and data["ragged"]["identical_outputs"]
    rows.append(headline("HF speed: greedy outputs identical across decoders", bool(ok)))
    for row in rows:
        print(
            f"  {row['name']}: {row['value']:.3f}"
            if isinstance(row["value"], float)
            else f"  {row['name']}: {row['value']}"
        )
    path = write_results(__file__, data, out=args.out, argv=argv, headlines=rows)
    print("wrote", path)
    if not ok:
        raise SystemExit("greedy outputs differ between decoders")


if __name__ == "__main__":
    main()
