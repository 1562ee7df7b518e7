"""A serving over HTTP: a plain ASGI application (no web framework) and the command

    python -m nxpy.serving.http MODULE:SERVING --port 8000

which runs it on uvicorn (the optional extra ``nxpy[serving]``; nxpy itself needs no web
server). ``SERVING`` names a :class:`~nxpy.serving.Serving` in ``MODULE`` (or a function
of no arguments returning one); it is started if it is not running.

Requests (docs/serving.md):

* ``POST /`` with a JSON body: a list of examples (nested lists, or objects of nested
  lists for a container of tensors), each one row (``Batch.stack``; numbers become
  tensors as ``nx.tensor`` makes them: f32 or s32). With a ``preprocess``, the decoded
  JSON goes to it instead. Answer: ``{"outputs": ...}``, the caller's rows as lists.
* ``POST /`` with ``Content-Type: application/x-npy``: a NumPy ``.npy`` body whose
  leading axis is the rows (``Batch.concatenate``); the answer is the result as ``.npy``.
* ``GET /stats``: ``Serving.stats()`` as JSON; ``GET /health``: ``ok``.

Bad input is a 400 with ``{"error": ...}``, a stopped serving 503, a failed batch 500.

>>> import asyncio, json
>>> import nxpy as nx
>>> from nxpy.serving import Serving
>>> s = Serving(lambda x: x * 2, batch_size=4, batch_timeout=0.01, compiler="exla")
>>> with s:
...     asyncio.run(call(app(s), "POST", "/", json.dumps([[1.0, 2.0]]).encode()))
(200, b'{"outputs": [[2.0, 4.0]]}')
"""
from __future__ import annotations

import argparse
import asyncio
import importlib
import io
import json
import sys

import numpy as np

from .. import ops as O
from ..defn import tree as tree_mod
from ..tensor import Tensor
from .batch import Batch
from .core import Serving, ServingStopped

__all__ = ["app", "call", "load", "main"]

NPY = "application/x-npy"


class _BadRequest(ValueError):
    pass


def _example(v, what):
    """One example of a JSON body: nested lists (a tensor) or an object of them."""
    if isinstance(v, dict):
        return {k: _example(x, f"{what}.{k}") for k, x in v.items()}
    try:
        return O.tensor(v)
    except (TypeError, ValueError) as e:
        raise _BadRequest(f"{what}: expected numbers in nested lists ({e})") from None


def _jsonable(result):
    leaves, tree = tree_mod.flatten(result)
    return tree_mod.unflatten(tree, [np.asarray(v.to_numpy() if isinstance(v, Tensor) else v)
                                     .tolist() for v in leaves])


def _decode(serving, body: bytes, content_type: str):
    if content_type.split(";")[0].strip() == NPY:
        try:
            arr = np.load(io.BytesIO(body), allow_pickle=False)
        except (ValueError, OSError, EOFError) as e:
            raise _BadRequest(f"the body is not a .npy array ({e})") from None
        return arr if serving.preprocess is not None else Batch.concatenate([arr]), True
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise _BadRequest(f"the body is not JSON ({e})") from None
    if serving.preprocess is not None:
        return data, False
    if not isinstance(data, list) or not data:
        raise _BadRequest(f"expected a JSON list of examples, got {type(data).__name__}")
    return Batch.stack([_example(v, f"example {i}") for i, v in enumerate(data)]), False


def _encode(result, npy: bool):
    if npy:
        if not isinstance(result, (Tensor, np.ndarray)):
            raise _BadRequest("a .npy answer holds one tensor; this serving returns a "
                              "container (ask for JSON)")
        buf = io.BytesIO()
        np.save(buf, np.asarray(result.to_numpy() if isinstance(result, Tensor) else result),
                allow_pickle=False)
        return NPY, buf.getvalue()
    return "application/json", json.dumps({"outputs": _jsonable(result)}).encode()


def app(serving: Serving, *, max_body: int = 64 << 20):
    """The ASGI application serving ``serving`` (requests as in the module's docstring);
    ``max_body``: the largest body accepted, in bytes. Each request waits for its rows
    without holding a thread (``Serving.submit``), so any number of clients can be in
    flight at once."""
    if not isinstance(serving, Serving):
        raise TypeError(f"app: expected a Serving, got {type(serving).__name__}")

    async def respond(send, status, ctype, body):
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", ctype.encode()),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def error(send, status, message):
        await respond(send, status, "application/json",
                      json.dumps({"error": message}).encode())

    async def asgi(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        method, path = scope["method"], scope["path"]
        if method == "GET" and path == "/health":
            return await respond(send, 200, "text/plain", b"ok")
        if method == "GET" and path == "/stats":
            return await respond(send, 200, "application/json",
                                 json.dumps(serving.stats()).encode())
        if method != "POST" or path not in ("/", "/predict"):
            return await error(send, 404, f"no {method} {path}: POST / (or /predict), "
                                          f"GET /stats, GET /health")
        chunks, size = [], 0
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > max_body:
                return await error(send, 413, f"the body is larger than {max_body} bytes")
            chunks.append(chunk)
            if not msg.get("more_body"):
                break
        headers = dict(scope.get("headers") or [])
        ctype = headers.get(b"content-type", b"application/json").decode("latin-1")
        try:
            batch, npy = _decode(serving, b"".join(chunks), ctype)
            result = await asyncio.wrap_future(serving.submit(batch))
            if serving.postprocess is not None:
                result = serving.postprocess(result)
            out_type, body = _encode(result, npy)
        except (_BadRequest, TypeError, ValueError) as e:
            return await error(send, 400, str(e))
        except ServingStopped as e:
            return await error(send, 503, str(e))
        except Exception as e:  # a failed batch: this caller's answer, the server goes on
            return await error(send, 500, f"{type(e).__name__}: {e}")
        await respond(send, 200, out_type, body)

    return asgi


async def call(application, method: str, path: str, body: bytes = b"",
               content_type: str = "application/json"):
    """``(status, body)`` of one request to an ASGI ``application``, without a server
    (for tests and examples)."""
    sent = [{"type": "http.request", "body": body, "more_body": False}]
    out = {"status": None, "body": b""}

    async def receive():
        return sent.pop(0) if sent else {"type": "http.disconnect"}

    async def send(msg):
        if msg["type"] == "http.response.start":
            out["status"] = msg["status"]
        else:
            out["body"] += msg.get("body", b"")
    scope = {"type": "http", "method": method, "path": path,
             "headers": [(b"content-type", content_type.encode())]}
    await application(scope, receive, send)
    return out["status"], out["body"]


def load(spec: str) -> Serving:
    """The serving ``MODULE:NAME`` names (``NAME`` a Serving, or a function making one).

    >>> load("a_module_without_a_name")
    Traceback (most recent call last):
    ValueError: expected MODULE:SERVING, got 'a_module_without_a_name'
    """
    mod, sep, name = spec.partition(":")
    if not sep or not mod or not name:
        raise ValueError(f"expected MODULE:SERVING, got {spec!r}")
    obj = getattr(importlib.import_module(mod), name)
    if not isinstance(obj, Serving) and callable(obj):
        obj = obj()
    if not isinstance(obj, Serving):
        raise TypeError(f"{spec} is a {type(obj).__name__}, not a Serving")
    return obj


def main(argv=None) -> int:
    """``python -m nxpy.serving.http MODULE:SERVING [--host H] [--port N]``."""
    p = argparse.ArgumentParser(prog="python -m nxpy.serving.http",
                                description="Serve an nxpy Serving over HTTP (uvicorn).")
    p.add_argument("serving", help="MODULE:NAME of a Serving (or of a function making one)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--log-level", default="warning")
    args = p.parse_args(argv)
    try:
        import uvicorn
    except ImportError:
        print("python -m nxpy.serving.http needs uvicorn: pip install 'nxpy[serving]'",
              file=sys.stderr)
        return 2
    sys.path.insert(0, ".")
    serving = load(args.serving)
    if not serving.running:
        serving.start()
    try:
        uvicorn.run(app(serving), host=args.host, port=args.port, log_level=args.log_level,
                    access_log=False, lifespan="on")
    finally:
        serving.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
