"""Soak of `ebb serve` (ctest serve_soak, label soak): 2,000 mixed requests from 4 concurrent
clients with memory.shrink_every set over HTTP. Process RSS, read right after each shrink, has no
trend, and no request fails."""
import json
import random
import threading
import time

from serve_util import MODELS, Server, chat_body

TINY = "llama-tiny-fp32"
TOTAL = 2000
CLIENTS = 4
SHRINK_EVERY = 50


def slope(ys):
    n = len(ys)
    mx = (n - 1) / 2
    my = sum(ys) / n
    num = sum((i - mx) * (y - my) for i, y in enumerate(ys))
    den = sum((i - mx) ** 2 for i in range(n))
    return num / den


def test_two_thousand_mixed_requests_keep_rss_flat():
    with Server("--models-dir", str(MODELS), "--parallel", str(CLIENTS), "--max-queue", "16") as s:
        st, _, j = s.post(f"/v1/models/{TINY}/load", {"keep_alive": -1})
        assert st == 200, j
        st, _, j = s.request("PATCH", f"/v1/models/{TINY}/runtime", {"shrink_every": SHRINK_EVERY})
        assert st == 200, j
        failures = []
        done = [0]
        lock = threading.Lock()

        def client(seed):
            rng = random.Random(seed)
            for i in range(TOTAL // CLIENTS):
                kind = rng.choice(["chat", "stream", "completion"])
                words = " ".join(rng.choice(["memory", "ebbs", "back", "tokens", "arena"])
                                 for _ in range(rng.randint(1, 60)))
                n = rng.randint(1, 32)
                try:
                    if kind == "completion":
                        st, _, j = s.post("/v1/completions", {"model": TINY, "prompt": words,
                                                              "max_tokens": n, "temperature": 0})
                    else:
                        body = chat_body(TINY, words, max_tokens=n, stream=(kind == "stream"))
                        st, _, j = s.post("/v1/chat/completions", body)
                    if st != 200:
                        failures.append((kind, st, j))
                    elif kind == "stream":
                        assert isinstance(j, str) and j.rstrip().endswith("data: [DONE]"), j
                except Exception as e:  # noqa: BLE001 - every failure is reported
                    failures.append((kind, repr(e)))
                with lock:
                    done[0] += 1

        samples = []  # RSS right after each shrink
        stop = threading.Event()

        def monitor():
            last = None
            while not stop.is_set():
                st, _, j = s.get(f"/v1/models/{TINY}/runtime")
                if st == 200:
                    n = j["stats"]["num_shrinks"]
                    if last is not None and n != last:
                        samples.append(j["stats"]["process"]["rss_bytes"])
                    last = n
                time.sleep(0.02)

        threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
        mon = threading.Thread(target=monitor)
        t0 = time.monotonic()
        mon.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stop.set()
        mon.join()
        elapsed = time.monotonic() - t0
        assert not failures, failures[:5]
        assert done[0] == TOTAL
        assert s.metric("ebb_requests_total", model=TINY, outcome="completed") == TOTAL
        assert len(samples) >= 20, f"only {len(samples)} shrinks observed"
        warm = samples[len(samples) // 4:]
        per_shrink = slope(warm)
        print("RSS MiB after each shrink:", " ".join(f"{x / 2**20:.1f}" for x in samples))
        print(f"{TOTAL} requests in {elapsed:.1f} s; RSS after {len(samples)} shrinks: "
              f"{samples[0] / 2**20:.1f} .. {samples[-1] / 2**20:.1f} MiB; "
              f"slope {per_shrink / 1024:.1f} KiB per shrink")
        # No trend: under 8 KiB per request, as the in-process soak asserts.
        assert abs(per_shrink) / SHRINK_EVERY < 8 * 1024, per_shrink
