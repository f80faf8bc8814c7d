"""llm-d's KV-block index, rebuilt from the KV-cache events replicas publish (vLLM's wire format).

What llm-d's kv-cache manager does, written from its description:
- Block keys are its own, not the engine's: a prompt's tokens are cut into full blocks of block_size (a
  partial last block is dropped); each key is a 64-bit hash over the CBOR encoding (canonical) of the array
  [parent_key, block_tokens, extra] with extra = None. The first block's parent is the hash of the CBOR
  encoding of the hash seed (a string, "" by default). The hash is FNV-1a 64 (llm-d's first scheme); its
  later releases take the low 64 bits of SHA-256 of the same bytes instead (`digest="sha256"`).
- A BlockStored event maps the engine's hashes to llm-d keys: the parent engine hash names the parent key
  (none: the root), and its token_ids are cut into the blocks. BlockRemoved drops the pods' entries of the
  keys its engine hashes map to; AllBlocksCleared drops everything of that pod.
- A prompt's score on a pod is its longest run of consecutive keys from the first one that the pod holds.
"""

import hashlib
import threading

import cbor2
import msgpack
import zmq

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
MASK = (1 << 64) - 1


def fnv1a64(data: bytes) -> int:
    h = FNV_OFFSET
    for b in data:
        h ^= b
        h = (h * FNV_PRIME) & MASK
    return h


class KeyScheme:
    def __init__(self, block_size=16, hash_seed="", digest="fnv64a"):
        self.block_size = block_size
        self.digest = digest
        self.root = self._digest(cbor2.dumps(hash_seed, canonical=True))

    def _digest(self, data: bytes) -> int:
        if self.digest == "sha256":
            return int.from_bytes(hashlib.sha256(data).digest()[24:], "big")
        return fnv1a64(data)

    def key(self, parent: int, chunk) -> int:
        return self._digest(cbor2.dumps([parent, list(chunk), None], canonical=True))

    def chunks(self, tokens):
        bs = self.block_size
        return [tokens[i : i + bs] for i in range(0, len(tokens) - bs + 1, bs)]

    def keys(self, tokens, parent=None):
        parent = self.root if parent is None else parent
        out = []
        for c in self.chunks(tokens):
            parent = self.key(parent, c)
            out.append(parent)
        return out


def decode_message(frames):
    """(topic, seq, ts, events, dp_rank) of one message; events as lists whose first element is the type."""
    if len(frames) != 3:
        raise ValueError("a KV-event message has 3 frames, not %d" % len(frames))
    topic = frames[0].decode()
    if len(frames[1]) != 8:
        raise ValueError("the sequence number is 8 bytes")
    seq = int.from_bytes(frames[1], "big")
    batch = msgpack.unpackb(frames[2], raw=False, strict_map_key=False)
    ts, events = batch[0], batch[1]
    dp_rank = batch[2] if len(batch) > 2 else None
    return topic, seq, ts, events, dp_rank


class Index:
    """Key -> pods holding it, fed by events; thread-safe."""

    def __init__(self, scheme: KeyScheme):
        self.scheme = scheme
        self.lock = threading.Lock()
        self.pods_of = {}  # llm-d key -> set(pod)
        self.engine_to_key = {}  # (pod, engine hash) -> llm-d key
        self.events = 0
        self.gaps = 0
        self.last_seq = {}

    def apply(self, pod, seq, events):
        with self.lock:
            last = self.last_seq.get(pod)
            if last is not None and seq != last + 1:
                self.gaps += 1
            self.last_seq[pod] = seq
            for e in events:
                self.events += 1
                kind = e[0]
                if kind == "BlockStored":
                    hashes, parent, tokens = e[1], e[2], e[3]
                    bs = e[4]
                    if bs != self.scheme.block_size:
                        raise ValueError("block size %d, the index uses %d" % (bs, self.scheme.block_size))
                    pkey = self.scheme.root if parent is None else self.engine_to_key.get((pod, parent))
                    if pkey is None:
                        continue  # the parent is unknown (events were missed): llm-d skips the blocks
                    keys = self.scheme.keys(tokens, pkey)
                    for h, k in zip(hashes, keys):
                        self.engine_to_key[(pod, h)] = k
                        self.pods_of.setdefault(k, set()).add(pod)
                elif kind == "BlockRemoved":
                    for h in e[1]:
                        k = self.engine_to_key.pop((pod, h), None)
                        if k is not None and k in self.pods_of:
                            self.pods_of[k].discard(pod)
                            if not self.pods_of[k]:
                                del self.pods_of[k]
                elif kind == "AllBlocksCleared":
                    self.clear_pod(pod)
                else:
                    raise ValueError("unknown event type %r" % (kind,))

    def clear_pod(self, pod):
        for (p, h) in [x for x in self.engine_to_key if x[0] == pod]:
            k = self.engine_to_key.pop((p, h))
            s = self.pods_of.get(k)
            if s is not None:
                s.discard(pod)
                if not s:
                    del self.pods_of[k]

    def blocks_of(self, pod):
        with self.lock:
            return {k for k, pods in self.pods_of.items() if pod in pods}

    def longest_prefix(self, keys, pods):
        """pod -> number of consecutive keys from the first that the pod holds."""
        out = {p: 0 for p in pods}
        with self.lock:
            live = set(pods)
            for k in keys:
                holders = self.pods_of.get(k, set())
                live &= holders
                if not live:
                    break
                for p in live:
                    out[p] += 1
        return out


class Subscriber(threading.Thread):
    """Reads every replica's events into an Index (one SUB socket connected to all endpoints)."""

    def __init__(self, index: Index, endpoints):
        super().__init__(daemon=True)
        self.index = index
        self.ctx = zmq.Context.instance()
        self.sock = self.ctx.socket(zmq.SUB)
        self.sock.setsockopt(zmq.SUBSCRIBE, b"")
        for ep in endpoints:
            self.sock.connect(ep)
        self.stop_flag = threading.Event()
        self.topics = set()
        self.error = None

    def run(self):
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        try:
            while not self.stop_flag.is_set():
                if not dict(poller.poll(50)):
                    continue
                while True:
                    try:
                        frames = self.sock.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    topic, seq, _ts, events, _rank = decode_message(frames)
                    pod = topic.split("@")[1]  # kv@POD@MODEL
                    self.topics.add(topic)
                    self.index.apply(pod, seq, events)
        except Exception as e:  # surfaced by the harness
            self.error = e
        finally:
            self.sock.close(linger=0)

    def stop(self):
        self.stop_flag.set()
        self.join(timeout=5)
