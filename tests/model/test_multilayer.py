"""The multi-layer classifier (issue 9): the model interface, padding, attention of every layer,
rollout, float64 and bfloat16, checkpoints, LIME's generic path, the training recipe (resume,
screens) and the studies of chapter 8, on tiny models."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnxai import Pretrained, Vocab, explainers, fastlime
from attnxai.words import Words
from attnxai.model.config import AttentionConfig, MultiLayerConfig
from attnxai.model.single_layer import AttentionClassifier
from attnxai.model.multilayer import MultiLayerClassifier

from conftest import WORDS, random_model, tiny_text

@pytest.fixture(autouse=True)
def one_thread():
    """One torch thread: small models on a shared 2-core machine are faster so."""
    from attnxai.threads import single_threaded

    with single_threaded():
        yield


VARIANTS = [dict(), dict(norm="post"), dict(norm="none", residual=False), dict(norm="none"),
            dict(d_ff=12), dict(d_ff=12, norm="post"), dict(n_layers=1)]


def tiny_ml(seed: int = 0, *, n_layers: int = 3, padding: str = "mask", **kw) -> MultiLayerClassifier:
    # norm_jitter moves the LayerNorms off (1, 0): a real test
    return random_model(len(Vocab(list(WORDS))), seed=seed, n_layers=n_layers, d_value=3,
                        padding=padding, init_range=0.1, norm_jitter=0.3, **kw)


def tiny_ml_pretrained(seed: int = 0, **kw) -> Pretrained:
    m = tiny_ml(seed, **kw)
    return Pretrained(m, Vocab(list(WORDS)), {"train": {"profile": "tiny"}, "model": m.config.to_dict()}, {})


def ids_batch(m, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, m.vocab_size, (3, 12), generator=g)
    ids[:, 0] = m.cls_id
    ids[1, 8:] = m.pad_id
    ids[2, 5:] = m.pad_id
    return ids


@pytest.mark.parametrize("kw", VARIANTS)
def test_interface_padding_and_attention(kw):
    kw = dict(kw)
    m = tiny_ml(n_layers=kw.pop("n_layers", 3), **kw)
    ids = ids_batch(m)
    logits = m(ids)
    assert logits.shape == (3, 2) and logits.dtype == torch.float64
    # a review's logits do not depend on the padding of its batch
    assert torch.allclose(logits[1], m(ids[1:2, :8])[0], atol=1e-13, rtol=0)
    assert torch.allclose(m(ids, per_head=True).mean(1), logits, atol=1e-14, rtol=0)
    e, mask = m.embed(ids), m.pad_mask(ids)
    a = m.cls_attention(e, mask)
    assert a.shape == (3, m.n_layers, 2, 12)
    assert torch.allclose(a.sum(-1), torch.ones_like(a.sum(-1)), atol=1e-14)
    assert a[1, :, :, 8:].abs().max() == 0 and a[2, :, :, 5:].abs().max() == 0
    maps = m.attention_maps(e, mask)
    assert [tuple(x.shape) for x in maps] == [(3, 2, 12, 12)] * (m.n_layers - 1) + [(3, 2, 1, 12)]
    for layer, A in enumerate(maps):
        assert torch.allclose(A[:, :, 0], a[:, layer], atol=1e-15)
    # the explainers see every layer
    assert explainers.attention(m, ids, layer="all").shape == (3, m.n_layers, 12)
    assert torch.isnan(explainers.attention(m, ids, layer=-1)[2, 5:]).all()


def test_recorded_path_gives_the_same_logits():
    """The fused attention of the forward and the explicit matrices of cls_attention agree."""
    m = tiny_ml(n_layers=4, d_ff=6)
    ids = ids_batch(m)
    e, mask = m.embed(ids), m.pad_mask(ids)
    u_fast, _ = m._last_input(e, mask, None)
    u_rec, _ = m._last_input(e, mask, "cls")
    assert torch.allclose(u_fast, u_rec, atol=1e-13, rtol=0)


def test_one_layer_without_norm_is_the_papers_layer():
    ml = tiny_ml(n_layers=1, norm="none")
    single = AttentionClassifier(AttentionConfig(ml.vocab_size, d_embed=8, d_attn=4, d_value=3,
                                                 n_heads=2, max_len=40)).double()
    single.load_state_dict({k: getattr(ml, k).detach().clone()
                            for k in ("W_e", "W_q", "W_k", "W_v", "W_l")})
    ids = ids_batch(ml)
    assert torch.allclose(ml(ids), single(ids), atol=1e-14, rtol=0)
    assert torch.allclose(explainers.gradient(ml, ids), explainers.gradient(single, ids),
                          atol=1e-14, rtol=0)
    assert torch.allclose(explainers.rollout(ml, ids), explainers.attention(single, ids),
                          atol=1e-15, equal_nan=True)


def test_gradient_float64_against_finite_differences():
    m = tiny_ml(n_layers=3)
    ids = ids_batch(m)[:1]
    g, e = explainers.gradient(m, ids, 1, return_embeddings=True)
    mask = m.pad_mask(ids)
    h = 1e-6
    for t, d in ((0, 0), (3, 5), (7, 2)):
        ep, em = e.clone(), e.clone()
        ep[0, t, d] += h
        em[0, t, d] -= h
        with torch.no_grad():
            fd = (m.forward_embeddings(ep, mask)[0, 1] - m.forward_embeddings(em, mask)[0, 1]) / (2 * h)
        assert abs(float(fd) - float(g[0, t, d])) < 1e-8
    s = explainers.gradient_summaries(m, ids_batch(m), 1)
    assert set(s) == {"G-avg", "G-l1", "G-l2", "GxI"} and torch.isnan(s["GxI"][2, 5:]).all()


def test_rollout_by_hand():
    m = tiny_ml(n_layers=3)
    ids = ids_batch(m)
    e, mask = m.embed(ids), m.pad_mask(ids)
    maps = m.attention_maps(e, mask)
    eye = torch.eye(12, dtype=torch.float64)
    A1, A2 = (0.5 * x.mean(1) + 0.5 * eye for x in maps[:2])
    want = (maps[2].mean(1) @ A2 @ A1)[:, 0]
    got = explainers.rollout(m, ids)
    assert torch.allclose(got.nan_to_num(0), want, atol=1e-15)
    assert torch.allclose(got.nansum(-1), torch.ones(3, dtype=torch.float64), atol=1e-14)
    plain = tiny_ml(n_layers=2, residual=False, norm="none")
    maps = plain.attention_maps(plain.embed(ids), plain.pad_mask(ids))
    assert torch.allclose(explainers.rollout(plain, ids).nan_to_num(0),
                          (maps[1].mean(1) @ maps[0].mean(1))[:, 0], atol=1e-15)


def test_flip_output_layer_and_validation():
    m = tiny_ml()
    ids = ids_batch(m)
    f = explainers.flip_output_layer(m)
    assert torch.allclose(f(ids), -m(ids), atol=1e-14)
    assert torch.equal(explainers.attention(f, ids, layer="all").nan_to_num(0),
                       explainers.attention(m, ids, layer="all").nan_to_num(0))
    with pytest.raises(ValueError, match="norm"):
        MultiLayerConfig(50, norm="mid")
    with pytest.raises(ValueError, match="n_layers"):
        MultiLayerConfig(50, n_layers=0)
    with pytest.raises(ValueError, match="dropout"):
        MultiLayerConfig(50, dropout=1.0)
    with pytest.raises(ValueError, match="layer 3 does not exist"):
        explainers.attention(m, ids, layer=3)


def test_checkpoint_round_trip_float64_and_bf16(tmp_path):
    from attnxai.model.store.checkpoint import MODEL_CLASSES, load, save

    assert MODEL_CLASSES["MultiLayerClassifier"] is MultiLayerClassifier
    m = tiny_ml(n_layers=2, d_ff=6).float()
    vocab = Vocab(list(WORDS))
    conf = {"arch": "MultiLayerClassifier", "train": {"profile": "tiny"}, "model": m.config.to_dict()}
    path = save(Pretrained(m, vocab, conf, {"test_accuracy": 0.5}), tmp_path / "ml")
    back = load(path)
    assert isinstance(back.model, MultiLayerClassifier)
    for (k, a), (_, b) in zip(m.state_dict().items(), back.model.state_dict().items()):
        assert torch.equal(a, b), k
    text = "good film but the plot was boring"
    p32 = back.predict_logits([text])
    assert np.allclose(load(path, dtype=torch.float64).predict_logits([text]), p32, atol=1e-5)
    p16 = load(path, dtype=torch.bfloat16).predict_logits([text])
    assert np.allclose(p16, p32, atol=0.05)


@pytest.mark.parametrize("native", [True, False])
def test_bf16_products_without_native_kernel(monkeypatch, native):
    """On a CPU without native bfloat16 products a bfloat16 model's projections go through the
    float32 kernel: bfloat16 results equal to torch's own bfloat16 product to its rounding (a
    bfloat16 ulp), on either kind of CPU; float32 and float64 never take that path."""
    from attnxai.model import multilayer as ML

    monkeypatch.setattr(ML, "bf16_products_in_float32", lambda: not native)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 7, 16, generator=g).to(torch.bfloat16)
    W = torch.randn(12, 16, generator=g).to(torch.bfloat16)
    out = ML.linear(x, W)
    assert out.dtype == torch.bfloat16 and out.shape == (3, 7, 12)
    exact = torch.nn.functional.linear(x.double(), W.double())
    ulp = exact.abs() * 2.0 ** -7 + 1e-6                       # bfloat16's 8-bit significand
    assert ((out.double() - exact).abs() <= ulp).all()
    assert ((torch.nn.functional.linear(x, W).double() - out.double()).abs() <= 2 * ulp).all()
    for dtype in (torch.float32, torch.float64):
        assert torch.equal(ML.linear(x.to(dtype), W.to(dtype)),
                           torch.nn.functional.linear(x.to(dtype), W.to(dtype)))
    m = tiny_ml(n_layers=3).float()
    ids = m.collate([[1, 5, 6, 7, 8], [1, 9, 10]])
    m16 = MultiLayerClassifier(m.config).to(torch.bfloat16).eval()
    m16.load_state_dict(m.to(torch.bfloat16).state_dict())
    monkeypatch.setattr(ML, "bf16_products_in_float32", lambda: native)
    other = m16(ids)
    monkeypatch.setattr(ML, "bf16_products_in_float32", lambda: not native)
    assert torch.allclose(m16(ids).float(), other.float(), atol=0.05)


def test_lime_generic_path_is_lime():
    """fastlime on the multi-layer model takes lime's generic path and returns lime's numbers."""
    from lime.lime_text import LimeTextExplainer

    pre = tiny_ml_pretrained(n_layers=2)
    text = tiny_text(20, seed=3)
    res = fastlime.explain_instance(pre, text, num_samples=300, random_state=7)
    assert res.path == "generic"
    exp = LimeTextExplainer(mask_string="UNK", random_state=7).explain_instance(
        text, pre.predict_logits, labels=(1,), num_features=len(res.words), num_samples=300)
    lime_coef = dict(exp.as_list(label=1))
    assert np.allclose([lime_coef[w] for w in res.words], res.coef, atol=1e-8)
    assert abs(exp.intercept[1] - res.intercept) < 1e-8


def test_layer_lime_row():
    from attnxai.experiment.beyond_one_layer import _pearson, layer_lime_row

    pre = tiny_ml_pretrained(n_layers=3)
    text = tiny_text(25, seed=1)
    row = layer_lime_row(pre, text, seed=5, num_samples=200)
    assert len(row["corr_layers"]) == 3 and row["n_words"] == len(row["words"])
    res = fastlime.explain_instance(pre, text, num_samples=200, random_state=5)
    assert np.allclose(row["lime_coef"], res.coef)
    ids = pre.encode(text)
    a = explainers.attention(pre.model, ids, layer=1)[0]
    layout = Words.of(text.split(" "))
    per_word = dict(zip(layout.words, layout.to_words(a[1:])))
    x = np.array([per_word[w] for w in res.words])
    assert np.allclose(row["alpha_words"][1], x)
    assert row["corr_layers"][1] == pytest.approx(_pearson(x, np.abs(res.coef)))
    assert abs(np.sum(row["rollout_words"]) - (1 - float(explainers.rollout(pre.model, ids)[0, 0]))) < 1e-9


def test_bf16_inference_copy():
    from attnxai.experiment.beyond_one_layer import _inference_copy

    pre = tiny_ml_pretrained(n_layers=2)
    pre.model.float()
    cp = _inference_copy(pre, "bf16")
    assert next(cp.model.parameters()).dtype == torch.bfloat16
    assert next(pre.model.parameters()).dtype == torch.float32
    texts = [tiny_text(n, seed=n) for n in (5, 17, 30)]
    assert np.allclose(cp.predict_logits(texts), pre.predict_logits(texts), atol=0.05)
    assert _inference_copy(pre, "fp32") is pre


# ---------------------------------------------------------------- training
@pytest.fixture(scope="module")
def small_data(imdb):
    from attnxai.data import IMDb

    return IMDb(imdb.train[:320], imdb.valid[:64], imdb.test[:64], checksum=imdb.checksum)


SMALL = dict(n_train=320, n_valid=64, n_test=64, epochs=3, d_embed=16, min_freq=2, max_len=64)


def _equal_weights(a, b):
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(),
                                                 b.state_dict().values()))


@pytest.mark.parametrize("profile", ["multilayer-quick", "quick"])
def test_training_resumes_bit_for_bit(small_data, tmp_path, profile):
    """Interrupted after its second epoch and resumed from the saved state, a training ends with
    the uninterrupted weights: the multi-layer recipe (AdamW, schedule) and the single-layer one
    (LazyAdamW's moments and step)."""
    from attnxai.model import profiles as P
    from attnxai.model import train as T

    cfg = P.get_config(profile, **SMALL)
    seen = []
    ref, _, met = T.train(cfg, small_data, progress=False, on_epoch=seen.append)
    assert seen == list(range(1, cfg.epochs + 1))

    class Stop(Exception):
        pass

    def stop_at_2(epoch):
        if epoch == 2:
            raise Stop

    with pytest.raises(Stop):
        T.train(cfg, small_data, progress=False, state_dir=tmp_path / "state", on_epoch=stop_at_2)
    again, _, met2 = T.train(cfg, small_data, progress=False, state_dir=tmp_path / "state")
    assert met2["resumed_at"] == [2]
    assert _equal_weights(ref, again)
    assert [h["valid_accuracy"] for h in met["history"]] == \
        [h["valid_accuracy"] for h in met2["history"]]
    # a state of another config is ignored
    other = P.get_config(profile, **{**SMALL, "seed": 1})
    _, _, met3 = T.train(other, small_data, progress=False, state_dir=tmp_path / "state")
    assert met3["resumed_at"] == []


def test_the_state_written_in_the_background_is_the_one_submitted(small_data, tmp_path,
                                                                 monkeypatch):
    """The state is written while the next epoch trains (StateWriter): what reaches the disk is
    the state at submission, even when the weights and the optimiser's moments change in place
    before the write starts (the write is held here until they have)."""
    import threading

    from attnxai.model import profiles as P
    from attnxai.model import train as T
    from attnxai.model import train_state as S

    cfg = P.get_config("quick", **SMALL)
    split = T.encode_split(cfg, small_data)
    state = T.start(cfg, split, torch.device("cpu"))
    T.train_epoch(state, cfg, split)
    state.epoch = 1
    before = {k: v.clone() for k, v in state.model.state_dict().items()}
    moments = {(i, n): v.clone() for i, st in state.opt.state_dict()["state"].items()
               for n, v in st.items() if torch.is_tensor(v)}
    assert moments
    go, write = threading.Event(), S._write_state

    def held(*args):
        assert go.wait(60)
        write(*args)

    monkeypatch.setattr(S, "_write_state", held)
    writer = S.StateWriter(tmp_path / "state", cfg)
    writer.submit(state)
    T.train_epoch(state, cfg, split)        # changes weights and moments in place
    assert not torch.equal(state.model.W_e, before["W_e"])
    go.set()
    writer.wait()
    meta, tensors = S.load_state(tmp_path / "state", cfg)
    assert meta["epoch"] == 1
    for k, v in before.items():
        assert torch.equal(tensors[f"model.{k}"], v), k
    for (i, n), v in moments.items():
        assert torch.equal(tensors[f"opt.{i}.{n}"], v), (i, n)


def test_a_failed_background_write_is_raised(small_data, tmp_path):
    from attnxai.model import profiles as P
    from attnxai.model import train as T

    cfg = P.get_config("quick", **SMALL)
    blocker = tmp_path / "state"
    blocker.write_text("a file where the state's folder goes")
    with pytest.raises(OSError):
        T.train(cfg, small_data, progress=False, state_dir=blocker)


def test_screen_is_the_first_epoch_of_the_full_run(small_data):
    from attnxai.model import profiles as P
    from attnxai.model import train as T

    cfg = P.get_config("multilayer-quick", **SMALL)
    screen = P.get_config(cfg, extra={**cfg.extra, "stop_after": 1})
    m1, _, met1 = T.train(screen, small_data, progress=False)
    full, _, met = T.train(cfg, small_data, progress=False)
    assert met1["history"][0]["valid_accuracy"] == met["history"][0]["valid_accuracy"]
    assert met1["history"][0]["train_loss"] == met["history"][0]["train_loss"]
    assert met1["test_accuracy"] is None and len(met1["history"]) == 1


def test_paper_recipe_is_unchanged_and_skip_shares_weights(small_data):
    """An empty extra is the authors' loop: no schedule, no clipping, random batches; the skip
    model of a seed draws the other weights as the model without it."""
    from attnxai.model import profiles as P
    from attnxai.model import train as T

    tiny = dict(SMALL, epochs=1, d_attn=8, d_value=8, n_heads=2)
    r = P.recipe(P.get_config("paper"))
    assert (r["arch"], r["warmup"], r["clip"], r["batching"]) == ("single", 0.0, None, "random")
    m, _, _ = T.train(P.get_config("quick", **tiny), small_data, progress=False)
    assert isinstance(m, AttentionClassifier) and not m.skip and "skip" not in m.config.to_dict()
    vocab = Vocab(list(WORDS))
    torch.manual_seed(3)
    a = T.build_model(P.get_config("paper", d_embed=16), vocab)
    torch.manual_seed(3)
    b = T.build_model(P.get_config("paper-skip", d_embed=16), vocab)
    assert b.skip and b.config.skip is True and b.config.to_dict()["skip"] is True
    for k in ("W_e", "W_q", "W_k", "W_v", "W_l"):
        assert torch.equal(getattr(a, k), getattr(b, k))
    with pytest.raises(ValueError, match="unknown TrainConfig.extra"):
        P.recipe(P.get_config("paper", extra={"skipp": True}))
    with pytest.raises(ValueError, match="stop_after"):
        P.recipe(P.get_config("paper", extra={"stop_after": 11}))


def test_bucketed_batches_cover_every_review_once():
    from attnxai.model.train import bucketed_batches

    lengths = list(np.random.default_rng(0).integers(2, 200, 1000))
    batches = bucketed_batches(lengths, 32, torch.Generator().manual_seed(0), chunk_batches=5)
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(1000))
    spread = np.mean([np.ptp([lengths[i] for i in b]) for b in batches])
    assert spread < np.ptp(lengths) / 2


def test_lr_factor():
    from attnxai.model.train import lr_factor

    assert [lr_factor(s, 100, 0.05, "linear") for s in (0, 4)] == [0.2, 1.0]
    assert lr_factor(99, 100, 0.05, "linear") == pytest.approx(1 / 95)
    assert lr_factor(50, 100, 0.0, "constant") == 1.0


# ---------------------------------------------------------------- studies
@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNXAI_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_layer_lime_study_runs_and_resumes(small_data, tmp_cache, tmp_path, monkeypatch):
    from attnxai import data
    from attnxai.model import trained
    from attnxai.experiment import load_results, run
    from attnxai.experiment.beyond_one_layer import LayerLime, layer_summary
    from attnxai.model.profiles import get_config

    monkeypatch.setattr(trained, "load_imdb", lambda *a, **k: small_data)
    cfg = get_config("multilayer-quick", **{**SMALL, "epochs": 1})
    trained.pretrained(cfg, progress=False)
    monkeypatch.setattr(data, "load_imdb", lambda *a, **k: small_data)
    study = LayerLime(profile=cfg, reviews=3, num_samples=60, precision="bf16", chunk=2)
    rep = run(study, tmp_path / "out", progress=False)
    assert rep.computed == 3
    df = load_results(tmp_path / "out", keys=("test_index",), sort=("rank",))
    assert len(df) == 3 and all(len(c) == 2 for c in df["corr_layers"])
    assert set(df["path"]) == {"generic"}
    summ = layer_summary(df)
    assert list(summ["explainer"]) == ["layer 1", "layer 2", "rollout", "|G x I|"]
    again = run(LayerLime(profile=cfg, reviews=3, num_samples=60, precision="bf16", chunk=2),
                tmp_path / "out", progress=False)
    assert again.computed == 0 and again.skipped == 3
    with pytest.raises(ValueError, match="precision"):
        LayerLime(profile=cfg, reviews=3, precision="fp16")
    # LIME's settings: one LimeSettings, checked once, before the model is loaded
    with pytest.raises(ValueError, match="kernel_width"):
        LayerLime(profile="no-such-profile", reviews=3, kernel_width=-1.0)
    with pytest.raises(TypeError, match="num_sample"):
        LayerLime(profile="no-such-profile", reviews=3, num_sample=60)


def test_training_runs_study(small_data, tmp_cache, tmp_path, monkeypatch):
    from attnxai.model import trained
    from attnxai.experiment import load_results, run
    from attnxai.experiment.beyond_one_layer import TrainingRuns, screen_runs, skip_runs
    from attnxai.model.profiles import PROFILES, TrainConfig, get_config

    monkeypatch.setattr(trained, "load_imdb", lambda *a, **k: small_data)

    paper = skip_runs([42])
    assert TrainConfig(**paper[0]["config"]) == PROFILES["paper"]
    assert TrainConfig(**paper[1]["config"]) == PROFILES["paper-skip"]
    runs = skip_runs([42, 7], base="quick")
    assert [r["run"] for r in runs] == ["no skip, seed 42", "skip, seed 42", "no skip, seed 7",
                                        "skip, seed 7"]
    tiny = dict(SMALL, epochs=1, d_attn=8, d_value=8, n_heads=2)
    for r in runs:
        r["config"] = get_config("quick", **tiny, seed=r["seed"],
                                 extra={"skip": True} if r["skip"] else {}).to_dict()
    rep = run(TrainingRuns(runs[:2], name="skip"), tmp_path / "skip", progress=False)
    assert rep.computed == 2
    df = load_results(tmp_path / "skip", keys=("run",), sort=("rank",))
    assert df["test_accuracy"].between(0, 1).all() and list(df["skip"]) == [False, True]
    assert run(TrainingRuns(runs[:2], name="skip"), tmp_path / "skip",
               progress=False).computed == 0
    screens = screen_runs(["post-LN"], base=get_config("multilayer-quick", **SMALL))
    assert screens[0]["config"]["extra"]["norm"] == "post"
    assert screens[0]["config"]["extra"]["stop_after"] == 1
    with pytest.raises(ValueError, match="unknown screens"):
        screen_runs(["nope"])
    with pytest.raises(ValueError, match="distinct"):
        skip_runs([1, 1])


def test_bf16_copy_is_only_for_the_generic_path():
    """The single-layer model's LIME takes the fast path (float64 projections of the saved
    weights): a bfloat16 copy would only round its weights, so it gets none."""
    from attnxai.model.textmodel import Pretrained
    from attnxai.experiment.beyond_one_layer import _fast_path_model, _inference_copy

    small = dict(d_value=4, max_len=12, init_range=0.1, dtype=torch.float32)
    single = random_model(30, **small)
    pre = Pretrained(single, None, {}, {}, None)
    assert _fast_path_model(single) and _inference_copy(pre, "bf16") is pre
    skip = random_model(30, skip=True, **small)
    assert not _fast_path_model(skip)
    deep = random_model(30, n_layers=2, **small)
    copy16 = _inference_copy(Pretrained(deep, None, {}, {}, None), "bf16")
    assert copy16.model.W_q.dtype == torch.bfloat16 and deep.W_q.dtype == torch.float32


def test_best_offset_finds_the_shifted_threshold_and_refuses_mismatched_shapes():
    from attnxai.experiment.beyond_one_layer import best_offset

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 4000)
    d = np.where(y == 1, 1.0, -1.0) + 0.5 + 0.3 * rng.standard_normal(4000)   # biased by +0.5
    r = best_offset(d[:2000], y[:2000], d[2000:], y[2000:])
    assert abs(r["theta"] - 0.5) < 0.2
    assert r["valid_after"] >= r["valid_before"] and r["test_after"] > r["test_before"]
    unbiased = best_offset(d - 0.5, y, d - 0.5, y, grid=np.array([-0.01, 0.0, 0.01]))
    assert unbiased["valid_after"] >= unbiased["valid_before"]
    with pytest.raises(ValueError, match="equal length"):
        best_offset(d[:10], y[:9], d, y)
