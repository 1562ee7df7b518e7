"""nx.serialize / nx.deserialize, nx.save / nx.load and NumPy's .npy/.npz files: every
type (bf16 and complex included), shapes, names and containers survive byte for byte,
from and onto the NumPy and EXLA backends; foreign, truncated and damaged input gives
a clear error."""
import collections
import io

import numpy as np
import pytest

import nxpy as nx
from nxpy import types as T
from nxpy.defn import jit
from nxpy.serialize import MAGIC, SerializationError

BACKENDS = ["numpy", "exla"]
_rng = np.random.default_rng(3)


def sample(t: T.Type, shape):
    dt = t.dtype
    if t.is_pred:
        return _rng.integers(0, 2, shape).astype(bool)
    if t.is_complex:
        return (_rng.standard_normal(shape) + 1j * _rng.standard_normal(shape)).astype(dt)
    if t.is_inexact:
        a = _rng.standard_normal(shape).astype(dt)
        if a.size > 2:  # the bits of special values survive too
            a.flat[0], a.flat[1] = np.asarray(np.nan, dt), np.asarray(-0.0, dt)
        return a
    info = np.iinfo(dt)
    return _rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)


def raw(t: nx.Tensor) -> bytes:
    return np.ascontiguousarray(np.asarray(t.to_numpy(), t.type.dtype)).tobytes()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("type_", [str(t) for t in T.ALL_TYPES])
def test_every_type_round_trips_byte_for_byte(type_, backend):
    t = T.parse(type_)
    for shape in [(), (3,), (2, 0, 4), (2, 3)]:
        x = nx.tensor(sample(t, shape), type=t, backend=backend)
        back = nx.deserialize(nx.serialize(x), backend=backend)
        assert (back.shape, back.type, back.names) == (x.shape, x.type, x.names)
        assert back.backend.name == backend
        assert raw(back) == raw(x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_containers_names_and_numbers(backend):
    Params = collections.namedtuple("Params", ["w", "b"])
    w = nx.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), names=["rows", None],
                  backend=backend)
    value = {"params": Params(w, nx.tensor([1 + 2j], type="c128", backend=backend)),
             "layers": [w, (None, nx.tensor(7, type="u8", backend=backend))],
             3: 2.5, None: True, "empty": (), "nested": {"x": []}}
    back = nx.deserialize(nx.serialize(value))
    assert list(back) == ["params", "layers", 3, None, "empty", "nested"]
    p = back["params"]
    assert type(p).__name__ == "Params" and p._fields == ("w", "b")
    assert p.w.names == ("rows", None) and p.w.tolist() == w.tolist()
    assert str(p.b.type) == "c128" and p.b.tolist() == [1 + 2j]
    assert isinstance(back["layers"], list) and back["layers"][1][0] is None
    assert str(back["layers"][1][1].type) == "u8" and back["layers"][1][1].tolist() == 7
    assert str(back[3].type) == "f32" and back[3].tolist() == 2.5  # numbers become tensors
    assert str(back[None].type) == "pred"
    assert back["empty"] == () and back["nested"] == {"x": []}
    # the bytes are a function of the value: serializing what was read gives them again
    assert nx.serialize(back) == nx.serialize(value)


def test_results_of_compiled_programs_and_the_default_backend():
    out = jit(lambda x: (x * 2, nx.as_type(x, "bf16")), compiler="exla")(nx.tensor([1.5, -2.0]))
    back = nx.deserialize(nx.serialize(out))
    assert back[0].backend.name == "numpy"  # the default backend (tests run on NumPy)
    assert back[0].tolist() == [3.0, -4.0] and str(back[1].type) == "bf16"
    on_exla = nx.deserialize(nx.serialize(out), backend="exla")
    assert on_exla[1].backend.name == "exla" and raw(on_exla[1]) == raw(out[1])


def test_save_and_load_files(tmp_path):
    value = {"w": nx.tensor(sample(T.parse("bf16"), (4, 4)), type="bf16"), "step": nx.tensor(10)}
    path = tmp_path / "ckpt.nx"
    nx.save(value, path)
    assert path.read_bytes()[:8] == MAGIC
    back = nx.load(str(path))
    assert raw(back["w"]) == raw(value["w"]) and back["step"].tolist() == 10
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.nx"]  # no temporary file left


def test_foreign_truncated_and_damaged_input(tmp_path):
    blob = nx.serialize({"a": nx.tensor(np.arange(100, dtype=np.float32))})
    with pytest.raises(SerializationError, match="not an nxpy serialized value"):
        nx.deserialize(b"\x93NUMPY" + blob[6:])
    with pytest.raises(SerializationError, match="not an nxpy serialized value"):
        nx.deserialize(b"")
    for cut in (10, 30, len(blob) - 1):
        with pytest.raises(SerializationError, match="truncated"):
            nx.deserialize(blob[:cut])
    damaged = bytearray(blob)
    damaged[-5] ^= 0xFF
    with pytest.raises(SerializationError, match="damaged: the checksum"):
        nx.deserialize(bytes(damaged))
    newer = bytearray(blob)
    newer[8] = 9
    with pytest.raises(SerializationError, match="format version 9"):
        nx.deserialize(bytes(newer))
    (tmp_path / "x.nx").write_bytes(blob[:40])
    with pytest.raises(SerializationError, match=r"load '.*x\.nx': truncated"):
        nx.load(tmp_path / "x.nx")
    with pytest.raises(TypeError, match="deserialize: expected bytes, got str"):
        nx.deserialize("NXPYSER")
    with pytest.raises(TypeError, match=r"serialize: expected tensors.*got str at \['a'\]\[1\]"):
        nx.serialize({"a": [1, "text"]})
    with pytest.raises(TypeError, match="dict keys must be"):
        nx.serialize({(1, 2): nx.tensor(1)})


@pytest.mark.parametrize("backend", BACKENDS)
def test_numpy_files_both_ways(tmp_path, backend):
    x = nx.tensor(sample(T.parse("c64"), (3, 2)), type="c64", backend=backend)
    nx.save_numpy(tmp_path / "x.npy", x)
    got = np.load(tmp_path / "x.npy", allow_pickle=False)
    assert got.dtype == np.complex64 and got.tobytes() == raw(x)
    back = nx.load_numpy(tmp_path / "x.npy", backend=backend)
    assert back.backend.name == backend and raw(back) == raw(x) and str(back.type) == "c64"
    # .npz both ways, against NumPy's own writer and reader
    arrays = {"w": sample(T.parse("f64"), (2, 2)), "i": sample(T.parse("s16"), (5,)),
              "m": sample(T.parse("pred"), (1, 3))}
    np.savez_compressed(tmp_path / "np.npz", **arrays)
    loaded = nx.load_numpy(tmp_path / "np.npz")
    assert sorted(loaded) == ["i", "m", "w"]
    for k, a in arrays.items():
        assert loaded[k].type == T.from_dtype(a.dtype) and raw(loaded[k]) == a.tobytes()
    nx.save_numpy(tmp_path / "nx.npz", loaded)
    with np.load(tmp_path / "nx.npz", allow_pickle=False) as z:
        for k, a in arrays.items():
            assert z[k].dtype == a.dtype and z[k].tobytes() == a.tobytes()


def test_numpy_files_refuse_what_they_cannot_hold(tmp_path):
    with pytest.raises(TypeError, match="bf16, which NumPy's .npy format cannot describe"):
        nx.save_numpy(tmp_path / "b.npy", nx.tensor([1.0], type="bf16"))
    np.save(tmp_path / "o.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(SerializationError, match="load_numpy .*o.npy"):
        nx.load_numpy(tmp_path / "o.npy")  # a pickle inside: never loaded
    np.save(tmp_path / "s.npy", np.array(["text"]))
    with pytest.raises(SerializationError, match="dtype <U4 has no nxpy type"):
        nx.load_numpy(tmp_path / "s.npy")
    (tmp_path / "f.npy").write_bytes(b"hello")
    with pytest.raises(SerializationError, match="not a NumPy .npy file or .npz archive"):
        nx.load_numpy(tmp_path / "f.npy")
    good = io.BytesIO()
    np.save(good, np.arange(1000, dtype=np.float32))
    (tmp_path / "t.npy").write_bytes(good.getvalue()[:500])
    with pytest.raises(SerializationError, match="truncated or damaged"):
        nx.load_numpy(tmp_path / "t.npy")
    with pytest.raises(TypeError, match="must be strings"):
        nx.save_numpy(tmp_path / "k.npz", {1: nx.tensor(1)})
