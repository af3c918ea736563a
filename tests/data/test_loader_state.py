"""DataLoader.state_dict / load_state_dict: a loader restored mid-epoch hands out the
rest of that epoch, then the same epochs an uninterrupted loader does."""
import numpy as np
import pytest

import engine as en


def _rows(batch):
    return tuple(np.asarray(batch[0].numpy()).tolist())


def _epochs(loader, n):
    return [[_rows(b) for b in loader] for _ in range(n)]


def _make(arrays, seed=0):
    return en.data.DataLoader(arrays, batch_size=3, shuffle=True, seed=seed)


@pytest.mark.parametrize("taken", [0, 1, 3])      # 4 batches an epoch (3, 3, 3, 1)
def test_restored_loader_continues_as_the_uninterrupted_one(taken):
    data = (np.arange(10),)
    reference = _epochs(_make(data), 3)
    loader = _make(data)
    _epochs(loader, 1)                              # one whole epoch first
    epoch = iter(loader)
    seen = [_rows(next(epoch)) for _ in range(taken)]
    state = loader.state_dict()
    assert loader.epochs_completed == 1
    resumed = _make(data, seed=99)                  # another seed: the state decides
    resumed.load_state_dict(state)
    assert resumed.epochs_completed == 1
    assert resumed.state_dict() == state            # saved again before it iterates
    rest = [_rows(b) for b in resumed]
    assert seen + rest == reference[1]
    assert _epochs(resumed, 1) == [reference[2]]


def test_state_after_a_whole_epoch_starts_the_next_one():
    data = (np.arange(7),)
    reference = _epochs(_make(data), 2)
    loader = _make(data)
    _epochs(loader, 1)
    resumed = _make(data, seed=5)
    resumed.load_state_dict(loader.state_dict())
    assert resumed.epochs_completed == 1 and _epochs(resumed, 1) == [reference[1]]


def test_bad_states_are_refused():
    loader = _make((np.arange(10),))
    with pytest.raises(en.data.DataError, match="not a DataLoader state"):
        loader.load_state_dict({"position": 1})
    state = loader.state_dict()
    with pytest.raises(en.data.DataError, match="outside an epoch of 4 batches"):
        loader.load_state_dict({**state, "position": 4})


def test_dask_loader_resumes_mid_epoch():
    da = pytest.importorskip("dask.array")
    data = (da.from_array(np.arange(20.0), chunks=5),)
    reference = _epochs(_make(data), 2)
    loader = _make(data)
    epoch = iter(loader)
    seen = [_rows(next(epoch)) for _ in range(2)]
    resumed = _make(data, seed=3)
    resumed.load_state_dict(loader.state_dict())
    assert seen + [_rows(b) for b in resumed] == reference[0]
    assert _epochs(resumed, 1) == [reference[1]]
