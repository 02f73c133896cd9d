"""Churn of `ebb serve` (ctest serve_churn, label soak; issue 24, Done-when 3): 4 clients x 500
requests over three model ids while the models underneath them are unloaded (forced and not),
evicted by the memory budget and expired by a short keep-alive (and by requests that ask for
keep_alive 0). Every request succeeds, KV in use
ends at 0, and /metrics counts exactly what was sent. EBB_CHURN_PER_CLIENT shortens it."""
import os
import random
import threading
import time

from serve_util import MODELS, Server, chat_body, wait_until, weights_bytes

TINY = "llama-tiny-fp32"
CLIENTS = 4
PER_CLIENT = int(os.environ.get("EBB_CHURN_PER_CLIENT", "500"))
IDS = ("a", "b", "c")


def test_requests_survive_unloads_evictions_and_expiries():
    folder = MODELS / TINY
    w = weights_bytes(folder)
    # Two models and their requests' KV fit, three do not: a request for the third evicts one.
    limit = 2 * w + w // 2
    args = ["--memory-limit", str(limit), "--keep-alive", "1s", "--parallel", str(CLIENTS),
            "--max-queue", "64"]
    for mid in IDS:
        args += ["--model", f"{mid}={folder}"]
    with Server(*args) as s:
        sent = {mid: 0 for mid in IDS}
        failures = []
        lock = threading.Lock()

        def client(seed):
            rng = random.Random(seed)
            for i in range(PER_CLIENT):
                mid = IDS[(seed + i) % len(IDS)]
                kind = rng.choice(["chat", "stream", "completion"])
                n = rng.randint(1, 12)
                # One request in eight asks for keep_alive 0: its model expires the moment it is
                # idle, under the other clients' load (the race of finding 6).
                extra = {"keep_alive": "0"} if rng.random() < 0.125 else {}
                try:
                    if kind == "completion":
                        st, _, j = s.post("/v1/completions", {"model": mid, "prompt": "memory",
                                                              "max_tokens": n, "temperature": 0,
                                                              **extra})
                    else:
                        st, _, j = s.post("/v1/chat/completions",
                                          chat_body(mid, "ebbs back", max_tokens=n,
                                                    stream=(kind == "stream"), **extra))
                    ok = st == 200 and (kind != "stream" or j.rstrip().endswith("data: [DONE]"))
                    if not ok:
                        with lock:
                            failures.append((mid, kind, st, j))
                except Exception as e:  # noqa: BLE001 - every failure is reported
                    with lock:
                        failures.append((mid, kind, repr(e)))
                with lock:
                    sent[mid] += 1

        stop = threading.Event()
        unloads = {"forced": 0, "plain": 0, "not_loaded": 0, "other": []}

        def unloader():
            rng = random.Random(99)
            k = 0
            while not stop.is_set():
                mid = rng.choice(IDS)
                force = k % 2 == 0
                st, _, j = s.post(f"/v1/models/{mid}/unload", {"force": force})
                if st == 200:
                    unloads["forced" if force else "plain"] += 1
                elif st in (404, 409):  # not loaded right now, or busy for a plain unload
                    unloads["not_loaded"] += 1
                else:
                    unloads["other"].append((st, j))
                k += 1
                time.sleep(rng.uniform(0.005, 0.05))

        threads = [threading.Thread(target=client, args=(c,)) for c in range(CLIENTS)]
        u = threading.Thread(target=unloader)
        t0 = time.monotonic()
        u.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stop.set()
        u.join()
        elapsed = time.monotonic() - t0
        # Let the last keep-alive run out so expiries are counted too.
        wait_until(lambda: not any(m["loaded"] for m in s.runtime()["models"]), 10)
        # The expiry thread counts an expiry just after the unload is visible.
        wait_until(lambda: s.metric("ebb_model_expirations_total") > 0, 2)

        total = CLIENTS * PER_CLIENT
        rt = s.runtime()
        completed = sum(s.metric("ebb_requests_total", model=mid, outcome="completed")
                        for mid in IDS)
        expirations = s.metric("ebb_model_expirations_total")
        evictions = s.metric("ebb_model_evictions_total")
        print(f"{total} requests in {elapsed:.1f} s; {len(failures)} failed; unloads "
              f"forced={unloads['forced']} plain={unloads['plain']} "
              f"refused={unloads['not_loaded']}; evictions={evictions:.0f} "
              f"expirations={expirations:.0f}; kv in use at the end "
              f"{rt['stats']['kv']['in_use_bytes']} B")
        assert not failures, failures[:5]
        assert not unloads["other"], unloads["other"][:5]
        assert sum(sent.values()) == total
        assert completed == total, (completed, total)
        assert rt["requests"]["error"] == 0 and rt["requests"]["cancelled"] == 0, rt["requests"]
        assert rt["queue"]["rejected"] == 0, rt["queue"]
        assert rt["stats"]["kv"]["in_use_bytes"] == 0, rt["stats"]
        assert rt["stats"]["used_bytes"] <= limit
        # A plain unload during the churn succeeds only when it finds its model loaded and idle;
        # with 4 clients on 3 models (slower still under ASan) it may find every one busy (409),
        # which is correct. So forced ones must have happened, and a plain one is proved below.
        assert unloads["forced"] > 0, unloads
        assert evictions > 0, "the test evicted nothing"
        assert expirations > 0, "the test expired nothing"

        # After the churn, a plain unload of a loaded, idle model succeeds and frees its KV.
        st, _, j = s.post("/v1/chat/completions",
                          chat_body(IDS[0], "ebbs back", max_tokens=2, keep_alive="10m"))
        assert st == 200, j
        assert any(m["id"] == IDS[0] and m["loaded"] for m in s.runtime()["models"])
        st, _, j = s.post(f"/v1/models/{IDS[0]}/unload", {"force": False})
        assert st == 200, j
        rt = s.runtime()
        assert not any(m["id"] == IDS[0] and m["loaded"] for m in rt["models"]), rt["models"]
        assert rt["stats"]["kv"]["in_use_bytes"] == 0, rt["stats"]
