"""The rank-to-device helper of the GPU harness (nccl_core_backend.simhosts):
when ranks run as simulated hosts, which GPU each gets, and what it sets."""

from __future__ import annotations

import pytest

from nccl_core_backend import simhosts


def env(**kw) -> dict:
    return {k: str(v) for k, v in kw.items()}


@pytest.mark.parametrize("local_world,gpus,want", [(1, 1, False), (2, 1, True), (4, 1, True),
                                                   (2, 2, False), (4, 2, True), (4, 8, False),
                                                   (2, 0, False)])
def test_on_by_default_exactly_where_ranks_outnumber_gpus(local_world, gpus, want):
    assert simhosts.enabled(env(LOCAL_WORLD_SIZE=local_world), gpus) is want


def test_switch_wins_over_the_default():
    assert simhosts.enabled(env(LOCAL_WORLD_SIZE=1, NCCL_CORE_SIM_HOSTS=1), 8) is True
    assert simhosts.enabled(env(LOCAL_WORLD_SIZE=4, NCCL_CORE_SIM_HOSTS=0), 1) is False


@pytest.mark.parametrize("bad", ["yes", "2", "-1"])
def test_switch_refuses_other_values(bad):
    with pytest.raises(ValueError, match="NCCL_CORE_SIM_HOSTS"):
        simhosts.enabled(env(NCCL_CORE_SIM_HOSTS=bad), 1)


def test_local_world_size_must_be_a_number():
    with pytest.raises(ValueError, match="LOCAL_WORLD_SIZE"):
        simhosts.enabled(env(LOCAL_WORLD_SIZE="two"), 1)


@pytest.mark.parametrize("gpus", [1, 2, 3])
def test_round_robin_over_visible_gpus(gpus):
    got = [simhosts.device_index(r, gpus, simulated=True) for r in range(8)]
    assert got == [r % gpus for r in range(8)]


def test_real_hosts_get_their_own_gpu_or_a_clear_error():
    assert [simhosts.device_index(r, 4, simulated=False) for r in range(4)] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="LOCAL_RANK=2 but only 2 GPU"):
        simhosts.device_index(2, 2, simulated=False)
    with pytest.raises(ValueError, match="no CUDA GPU"):
        simhosts.device_index(0, 0, simulated=True)
    with pytest.raises(ValueError, match=">= 0"):
        simhosts.device_index(-1, 2, simulated=True)


def test_local_device_makes_each_rank_a_host_of_its_own():
    torch = pytest.importorskip("torch")
    seen = {}
    for rank in range(4):
        e = env(RANK=rank, LOCAL_RANK=rank, LOCAL_WORLD_SIZE=4)
        dev = simhosts.local_device(e, gpus=1)
        assert dev == torch.device("cuda", 0)
        assert e["NCCL_SOCKET_IFNAME"] == "lo"
        assert simhosts.active(e) and simhosts.nvlink_peers_missing(e)
        seen[e["NCCL_HOSTID"]] = rank
    assert sorted(seen) == [f"simhost{r}" for r in range(4)]


def test_local_device_keeps_a_chosen_interface_and_real_hosts_alone():
    torch = pytest.importorskip("torch")
    e = env(RANK=5, LOCAL_RANK=1, LOCAL_WORLD_SIZE=2, NCCL_SOCKET_IFNAME="eth0")
    assert simhosts.local_device(e, gpus=1) == torch.device("cuda", 0)
    assert e["NCCL_SOCKET_IFNAME"] == "eth0" and e["NCCL_HOSTID"] == "simhost5"
    real = env(RANK=1, LOCAL_RANK=1, LOCAL_WORLD_SIZE=2)
    assert simhosts.local_device(real, gpus=2) == torch.device("cuda", 1)
    assert "NCCL_HOSTID" not in real and not simhosts.active(real)
    assert simhosts.nvlink_peers_missing(real) is None


def test_rank_device_without_a_gpu_is_one_line():
    with pytest.raises(SystemExit) as e:
        simhosts.rank_device("allreduce.py", env={"LOCAL_RANK": "0"}, gpus=0)
    msg = str(e.value)
    assert msg.startswith("allreduce.py: no CUDA GPU visible") and "\n" not in msg


def test_rank_device_refuses_nvlink_scripts_on_simulated_hosts():
    env = {"LOCAL_RANK": "1", "RANK": "1", "LOCAL_WORLD_SIZE": "2"}
    with pytest.raises(SystemExit) as e:
        simhosts.rank_device("rma_pipeline.py", needs_nvlink="one-sided puts", env=env, gpus=1)
    msg = str(e.value)
    assert "rma_pipeline.py: one-sided puts need NVLink peers" in msg and "--nproc-per-node=1" in msg
    assert env["NCCL_HOSTID"] == "simhost1"


def test_rank_device_names_a_real_host_short_of_gpus():
    env = {"LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "4", "NCCL_CORE_SIM_HOSTS": "0"}
    with pytest.raises(SystemExit) as e:
        simhosts.rank_device("ddp_train.py", env=env, gpus=2)
    assert str(e.value).startswith("ddp_train.py: LOCAL_RANK=3 but only 2 GPU(s) visible")
