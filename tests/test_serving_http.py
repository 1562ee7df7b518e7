"""nxpy.serving.http: the ASGI front of a Serving on uvicorn, under a bounded load on the
loopback interface (32 clients x 4 requests, every wait bounded), and the command
``python -m nxpy.serving.http MODULE:SERVING``."""
import http.client
import io
import json
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import nxpy as nx
from nxpy.serving import Serving
from nxpy.serving.http import app

uvicorn = pytest.importorskip("uvicorn")

WAIT = 60
W = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)


def model(x):
    return nx.tanh(x @ W)


def ref(x):
    return np.tanh(np.asarray(x, np.float32) @ W)


@pytest.fixture(scope="module")
def server():
    """A Serving behind uvicorn on 127.0.0.1 (an ephemeral port), in a thread."""
    serving = Serving(model, batch_size=16, batch_timeout=0.02, compiler="exla").start()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app(serving), log_level="warning", access_log=False,
                            lifespan="on")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT
    while not srv.started and time.monotonic() < deadline and thread.is_alive():
        time.sleep(0.02)
    assert srv.started, "uvicorn did not start"
    try:
        yield serving, sock.getsockname()[1]
    finally:
        srv.should_exit = True
        thread.join(WAIT)
        serving.stop(timeout=WAIT)
        sock.close()


def post(port, body, ctype="application/json", conn=None):
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    c.request("POST", "/", body=body, headers={"Content-Type": ctype})
    r = c.getresponse()
    return r.status, r.read()


def test_http_front_under_a_bounded_loopback_load(server):
    serving, port = server
    before = serving.stats()
    xs = np.random.default_rng(1).standard_normal((32, 4, 4)).astype(np.float32)
    results, gate = {}, threading.Barrier(32)

    def client(i):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
        try:
            gate.wait(WAIT)
            for j in range(4):
                results[i, j] = post(port, json.dumps([xs[i, j].tolist()]), conn=conn)
        except Exception as e:  # handed to the test
            results[i, "error"] = e
        finally:
            conn.close()
    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert not any(t.is_alive() for t in threads)
    assert len(results) == 128, [v for k, v in results.items() if k[1] == "error"][:3]
    for (i, j), (status, body) in results.items():
        assert status == 200, body
        np.testing.assert_allclose(json.loads(body)["outputs"], ref(xs[i, j:j + 1]),
                                   rtol=1e-5, atol=1e-5)
    after = serving.stats()
    requests = after["requests"] - before["requests"]
    batches = after["batches"] - before["batches"]
    assert requests == 128 and 8 <= batches < 128, (requests, batches)  # batches formed
    assert after["largest"] <= 16


def test_http_npy_bodies_stats_and_errors(server):
    serving, port = server
    x = np.random.default_rng(2).standard_normal((20, 4)).astype(np.float32)  # > batch_size
    buf = io.BytesIO()
    np.save(buf, x)
    status, body = post(port, buf.getvalue(), "application/x-npy")
    assert status == 200
    np.testing.assert_allclose(np.load(io.BytesIO(body)), ref(x), rtol=1e-5, atol=1e-5)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    c.request("GET", "/stats")
    r = c.getresponse()
    assert r.status == 200 and json.loads(r.read())["requests"] >= 1
    status, body = post(port, b"{not json")
    assert status == 400 and "not JSON" in json.loads(body)["error"]
    status, body = post(port, json.dumps([[1.0, 2.0]]))  # the model takes 4 features
    assert status == 400 and json.loads(body)["error"]  # the input does not fit
    status, body = post(port, json.dumps([x[0].tolist()]))  # and the serving goes on
    assert status == 200


def test_the_command_serves_a_module(tmp_path):
    (tmp_path / "served.py").write_text(
        "import numpy as np\nimport nxpy as nx\nfrom nxpy.serving import Serving\n"
        "SERVING = Serving(lambda x: x * 3, batch_size=4, batch_timeout=0.01, "
        "compiler='exla')\n")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    proc = subprocess.Popen([sys.executable, "-m", "nxpy.serving.http", "served:SERVING",
                             "--port", str(port)], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    try:
        deadline, answer = time.monotonic() + WAIT, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                answer = post(port, json.dumps([[1.0, 2.0]]))
                break
            except OSError:
                time.sleep(0.2)
        assert answer == (200, b'{"outputs": [[3.0, 6.0]]}'), proc.poll()
    finally:
        proc.terminate()
        try:
            proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(WAIT)
