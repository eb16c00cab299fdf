#!/usr/bin/env python3
"""Serve a GGUF model with llama.cpp's server (the xllamacpp wheel) on 127.0.0.1.

benchspec launches this through `engine.launch` (kind `llama-cpp`); the wheel has no command
line of its own. SIGTERM or SIGINT stops it.
"""
import argparse
import signal
import sys
import threading

import xllamacpp


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True, help="path to the .gguf file")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--alias", default="smollm2", help="the served model name")
    ap.add_argument("--ctx", type=int, default=8192, help="total context (split over --parallel slots)")
    ap.add_argument("--parallel", type=int, default=4, help="request slots")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model-draft", help="a .gguf draft model: speculative decoding")
    ap.add_argument("--draft-max", type=int, default=8, help="most draft tokens per step")
    ap.add_argument("--draft-min", type=int, default=0, help="fewest draft tokens per step")
    a = ap.parse_args()

    p = xllamacpp.CommonParams()
    p.model.path = a.model
    p.model_alias = {a.alias}
    p.n_ctx = a.ctx
    p.n_parallel = a.parallel
    p.port = a.port
    p.hostnames = ["127.0.0.1"]
    p.endpoint_metrics = True
    p.cpuparams.n_threads = a.threads
    p.cpuparams_batch.n_threads = a.threads
    if a.model_draft:
        spec = p.speculative
        spec.types = [xllamacpp.common_speculative_type.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
        spec.draft.mparams.path = a.model_draft
        spec.draft.n_max = a.draft_max
        spec.draft.n_min = a.draft_min
        spec.draft.cpuparams.n_threads = a.threads
        spec.draft.cpuparams_batch.n_threads = a.threads
    server = xllamacpp.Server(p)
    print(f"llama.cpp server for {a.alias} at {server.listening_address}", flush=True)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
