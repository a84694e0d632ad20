"""nccl_core_backend.options (env_settings, make_options) and Options."""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest

from nccl_core_backend import Options
from nccl_core_backend.options import env_settings, make_options

INT_MIN = -(2**31)


# --- env_settings -----------------------------------------------------------


def test_empty_environment_sets_nothing():
    assert env_settings({}) == {}
    assert env_settings({"UNRELATED": "1"}) == {}


@pytest.mark.parametrize("text", ["1", "true", "TRUE", "yes", "On", " 1 "])
def test_true_values(text):
    assert env_settings({"NCCL_CORE_BLOCKING_WAIT": text}) == {"blocking_wait": True}


@pytest.mark.parametrize("text", ["0", "false", "No", "OFF", ""])
def test_false_values(text):
    assert env_settings({"NCCL_CORE_HIGH_PRIORITY": text}) == {
        "is_high_priority_stream": False
    }


def test_torch_variables_are_fallbacks():
    env = {"TORCH_NCCL_BLOCKING_WAIT": "1", "TORCH_NCCL_HIGH_PRIORITY": "yes"}
    assert env_settings(env) == {"blocking_wait": True, "is_high_priority_stream": True}


def test_nccl_core_variables_win():
    env = {
        "NCCL_CORE_BLOCKING_WAIT": "0",
        "TORCH_NCCL_BLOCKING_WAIT": "1",
        "NCCL_CORE_HIGH_PRIORITY": "1",
        "TORCH_NCCL_HIGH_PRIORITY": "0",
    }
    assert env_settings(env) == {"blocking_wait": False, "is_high_priority_stream": True}


def test_nccl_core_variable_wins_over_a_bad_torch_value():
    # The winner is parsed first; the fallback is never looked at.
    env = {"NCCL_CORE_BLOCKING_WAIT": "1", "TORCH_NCCL_BLOCKING_WAIT": "bogus"}
    assert env_settings(env) == {"blocking_wait": True}


@pytest.mark.parametrize(
    "name",
    [
        "NCCL_CORE_BLOCKING_WAIT",
        "TORCH_NCCL_BLOCKING_WAIT",
        "NCCL_CORE_HIGH_PRIORITY",
        "TORCH_NCCL_HIGH_PRIORITY",
    ],
)
@pytest.mark.parametrize("text", ["2", "maybe", "1.0"])
def test_bad_boolean_names_the_variable(name, text):
    with pytest.raises(ValueError, match=name):
        env_settings({name: text})


def test_watchdog_period():
    assert env_settings({"NCCL_CORE_WATCHDOG_MS": "250"}) == {
        "watchdog_interval": timedelta(milliseconds=250)
    }


@pytest.mark.parametrize("text", ["0", "-5", "abc", "1.5", ""])
def test_bad_watchdog_period_names_the_variable(text):
    with pytest.raises(ValueError, match="NCCL_CORE_WATCHDOG_MS"):
        env_settings({"NCCL_CORE_WATCHDOG_MS": text})


def test_unraised_error_grace():
    assert env_settings({"NCCL_CORE_UNRAISED_ERROR_GRACE_MS": "0"}) == {
        "unraised_error_grace": timedelta(0)
    }
    assert env_settings({"NCCL_CORE_UNRAISED_ERROR_GRACE_MS": "3500"}) == {
        "unraised_error_grace": timedelta(milliseconds=3500)
    }


@pytest.mark.parametrize("text", ["-1", "soon", "1.5"])
def test_bad_unraised_error_grace_names_the_variable(text):
    with pytest.raises(ValueError, match="NCCL_CORE_UNRAISED_ERROR_GRACE_MS"):
        env_settings({"NCCL_CORE_UNRAISED_ERROR_GRACE_MS": text})


def test_reads_process_environment_by_default(monkeypatch):
    for name in ("NCCL_CORE_BLOCKING_WAIT", "NCCL_CORE_HIGH_PRIORITY", "TORCH_NCCL_HIGH_PRIORITY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TORCH_NCCL_BLOCKING_WAIT", "1")
    monkeypatch.setenv("NCCL_CORE_WATCHDOG_MS", "40")
    assert env_settings() == {
        "blocking_wait": True,
        "watchdog_interval": timedelta(milliseconds=40),
    }


# --- make_options -----------------------------------------------------------


def test_defaults_without_anything():
    opts = make_options(None, None, env={})
    assert isinstance(opts, Options)
    assert opts.blocking_wait is False
    assert opts.is_high_priority_stream is False
    assert opts.watchdog_interval == timedelta(milliseconds=100)
    assert opts._timeout == timedelta(minutes=30)


def test_environment_applies_on_top_of_pg_options():
    pg = Options()
    pg.min_ctas = 8
    opts = make_options(pg, None, env={"NCCL_CORE_BLOCKING_WAIT": "1"})
    assert opts.blocking_wait is True
    assert opts.min_ctas == 8


def test_pg_options_are_copied_not_mutated():
    pg = Options()
    pg.comm_name = "mine"
    pg.group_name = "user"
    opts = make_options(
        pg, timedelta(seconds=7), env={"NCCL_CORE_HIGH_PRIORITY": "1", "NCCL_CORE_WATCHDOG_MS": "5"}
    )
    assert opts is not pg
    assert opts.comm_name == "mine" and opts.group_name == "user"
    assert opts.is_high_priority_stream is True
    assert opts._timeout == timedelta(seconds=7)
    # The caller's object is untouched.
    assert pg.is_high_priority_stream is False
    assert pg.watchdog_interval == timedelta(milliseconds=100)
    assert pg._timeout == timedelta(minutes=30)
    opts.comm_name = "changed"
    assert pg.comm_name == "mine"


@pytest.mark.parametrize("bad", [object(), {"blocking_wait": True}, "opts", 3])
def test_wrong_pg_options_type(bad):
    with pytest.raises(TypeError, match="nccl_core_backend.Options"):
        make_options(bad, None, env={})


@pytest.mark.parametrize(
    "timeout, expected",
    [
        (timedelta(minutes=2), timedelta(minutes=2)),
        (5, timedelta(seconds=5)),
        (0.25, timedelta(milliseconds=250)),
    ],
)
def test_timeout_conversion(timeout, expected):
    assert make_options(None, timeout, env={})._timeout == expected


@pytest.mark.parametrize("timeout", [0, -1, timedelta(0), timedelta(seconds=-3)])
def test_non_positive_timeout_rejected(timeout):
    with pytest.raises(ValueError, match="timeout"):
        make_options(None, timeout, env={})


def test_bad_environment_fails_make_options():
    with pytest.raises(ValueError, match="TORCH_NCCL_HIGH_PRIORITY"):
        make_options(None, None, env={"TORCH_NCCL_HIGH_PRIORITY": "sometimes"})


# --- Options ----------------------------------------------------------------


def test_options_defaults():
    o = Options()
    assert o.backend == "nccl_core"
    assert o._timeout == timedelta(minutes=30)
    assert o.watchdog_interval == timedelta(milliseconds=100)
    for name in ("cga_cluster_size", "min_ctas", "max_ctas", "split_share", "cta_policy", "traffic_class"):
        assert getattr(o, name) == INT_MIN, name  # NCCL's "unset"
    assert o.net_name == "" and o.comm_name == ""


def test_options_timeout_argument():
    assert Options(timeout=timedelta(seconds=12))._timeout == timedelta(seconds=12)
    assert Options(timedelta(milliseconds=1500))._timeout == timedelta(milliseconds=1500)


VALUES = {
    "is_high_priority_stream": True,
    "blocking_wait": True,
    "watchdog_interval": timedelta(milliseconds=37),
    "cga_cluster_size": 2,
    "min_ctas": 4,
    "max_ctas": 16,
    "split_share": 1,
    "cta_policy": 1,
    "traffic_class": 3,
    "net_name": "IB",
    "comm_name": "trainer",
    "group_name": "g7",
    "global_ranks_in_group": [3, 1, 2],
    "_timeout": timedelta(seconds=90),
}


def _filled() -> Options:
    o = Options()
    for name, value in VALUES.items():
        setattr(o, name, value)
    return o


@pytest.mark.parametrize("name", sorted(VALUES))
def test_options_attribute_round_trip(name):
    o = Options()
    setattr(o, name, VALUES[name])
    assert getattr(o, name) == VALUES[name]


@pytest.mark.parametrize("name", ["min_ctas", "traffic_class"])
def test_int_fields_refuse_strings(name):
    with pytest.raises(TypeError):
        setattr(Options(), name, "four")


@pytest.mark.parametrize("clone", [copy.copy, copy.deepcopy])
def test_options_copy_is_independent(clone):
    o = _filled()
    c = clone(o)
    assert type(c) is Options and c is not o
    for name, value in VALUES.items():
        assert getattr(c, name) == value, name
    c.min_ctas = 1
    c.net_name = "Socket"
    c.blocking_wait = False
    assert o.min_ctas == 4 and o.net_name == "IB" and o.blocking_wait is True


def test_deepcopy_inside_a_container():
    o = _filled()
    box = copy.deepcopy({"a": o, "b": [o]})
    assert box["a"].comm_name == "trainer"
    assert box["a"] is not o and box["b"][0] is not o


@pytest.mark.parametrize(
    "env,expected",
    [({"NCCL_CORE_ERROR_HANDLING": "fail"}, 0), ({"NCCL_CORE_ERROR_HANDLING": "Abort"}, 2),
     ({"NCCL_CORE_ERROR_HANDLING": "1"}, 1),
     ({"TORCH_NCCL_ASYNC_ERROR_HANDLING": "3"}, 3), ({"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}, 1),
     ({"TORCH_NCCL_ASYNC_ERROR_HANDLING": "0"}, 0), ({"TORCH_NCCL_ASYNC_ERROR_HANDLING": "2"}, 2),
     ({"NCCL_CORE_ERROR_HANDLING": "abort", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "3"}, 2)],
)
def test_error_handling_from_env(env, expected):
    from nccl_core_backend.options import env_settings

    assert env_settings(env)["error_handling"] == expected


def test_error_handling_option_and_its_older_spelling():
    from nccl_core_backend import Options

    o = Options()
    assert o.error_handling == 3 and o.abort_on_error is False
    o.abort_on_error = True
    assert o.error_handling == 2
    o.abort_on_error = False
    assert o.error_handling == 0
    o.error_handling = 2
    assert o.abort_on_error is True
    # 1 ends the process without aborting first (error_policy.h).
    o.error_handling = 1
    assert o.abort_on_error is False
    with pytest.raises(ValueError, match="error_handling must be 0-3"):
        o.error_handling = 4


def test_error_handling_rejects_unknown_values():
    from nccl_core_backend.options import env_settings

    with pytest.raises(ValueError, match="NCCL_CORE_ERROR_HANDLING"):
        env_settings({"NCCL_CORE_ERROR_HANDLING": "ignore"})
    with pytest.raises(ValueError, match="TORCH_NCCL_ASYNC_ERROR_HANDLING"):
        env_settings({"TORCH_NCCL_ASYNC_ERROR_HANDLING": "7"})
    with pytest.raises(ValueError, match="TORCH_NCCL_ASYNC_ERROR_HANDLING"):
        env_settings({"TORCH_NCCL_ASYNC_ERROR_HANDLING": "abort"})


@pytest.mark.parametrize("name", ["NCCL_CORE_COMM_NONBLOCKING", "TORCH_NCCL_USE_COMM_NONBLOCKING"])
@pytest.mark.parametrize("text,blocking", [("1", False), ("0", True)])
def test_nonblocking_communicators_on_request(name, text, blocking):
    assert env_settings({name: text}) == {"blocking": blocking}


def test_communicators_are_blocking_by_default():
    from nccl_core_backend.options import make_options

    opts = make_options(None, env={})
    assert opts.blocking is True
    opts = make_options(None, env={"NCCL_CORE_COMM_NONBLOCKING": "1"})
    assert opts.blocking is False


def test_fast_path_threshold_from_the_environment():
    assert env_settings({"NCCL_CORE_FAST_PATH_MAX_BYTES": "65536"}) == {
        "fast_path_max_bytes": 65536
    }
    assert env_settings({"NCCL_CORE_FAST_PATH_MAX_BYTES": "0"}) == {"fast_path_max_bytes": 0}
    with pytest.raises(ValueError, match="NCCL_CORE_FAST_PATH_MAX_BYTES"):
        env_settings({"NCCL_CORE_FAST_PATH_MAX_BYTES": "-1"})
    assert env_settings({"NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES": "262144"}) == {
        "eager_fast_path_max_bytes": 262144
    }
    with pytest.raises(ValueError, match="NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES"):
        env_settings({"NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES": "-1"})


def test_fast_path_is_left_to_the_path_table_by_default():
    from nccl_core_backend.options import make_options

    assert make_options(None, env={}).fast_path_max_bytes is None  # nccl_core_backend.paths
    assert make_options(None, env={}).eager_fast_path_max_bytes is None
    eager = make_options(None, env={"NCCL_CORE_EAGER_FAST_PATH_MAX_BYTES": "4096"})
    assert eager.eager_fast_path_max_bytes == 4096 and eager.fast_path_max_bytes is None
    off = make_options(None, env={"NCCL_CORE_FAST_PATH_MAX_BYTES": "0"})
    assert off.fast_path_max_bytes == 0
    off.fast_path_max_bytes = None  # back to the table
    assert off.fast_path_max_bytes is None


def test_retired_symmetric_max_bytes_warns_and_is_gone():
    from nccl_core_backend import options as o

    assert not hasattr(o.make_options(None, env={}), "symmetric_max_bytes")
    o._warned_env.discard("NCCL_CORE_SYMMETRIC_MAX_BYTES")
    with pytest.warns(UserWarning, match="NCCL_CORE_SYMMETRIC_MAX_BYTES: automatic symmetric windows are gone"):
        assert o.warn_unhonoured_env({"NCCL_CORE_SYMMETRIC_MAX_BYTES": "0"}) == ["NCCL_CORE_SYMMETRIC_MAX_BYTES"]
    assert env_settings({"NCCL_CORE_SYMMETRIC_MAX_BYTES": "4096"}) == {}


def test_push_all_reduce_defaults_and_environment():
    from nccl_core_backend.options import make_options

    opts = make_options(None, env={})
    assert (opts.push_min_bytes, opts.push_max_bytes, opts.push_ctas) == (None, None, 32)
    env = {"NCCL_CORE_PUSH_MIN_BYTES": "1048576", "NCCL_CORE_PUSH_MAX_BYTES": str(64 << 20),
           "NCCL_CORE_PUSH_CTAS": "64"}
    assert env_settings(env) == {"push_min_bytes": 1 << 20, "push_max_bytes": 64 << 20,
                                 "push_ctas": 64}
    opts = make_options(None, env=env)
    assert (opts.push_min_bytes, opts.push_max_bytes, opts.push_ctas) == (1 << 20, 64 << 20, 64)
    with pytest.raises(ValueError, match="NCCL_CORE_PUSH_MAX_BYTES"):
        env_settings({"NCCL_CORE_PUSH_MAX_BYTES": "-1"})
    with pytest.raises(ValueError, match="NCCL_CORE_PUSH_CTAS"):
        env_settings({"NCCL_CORE_PUSH_CTAS": "0"})


def test_two_shot_size_defaults_and_environment():
    from nccl_core_backend.options import make_options

    assert make_options(None, env={}).two_shot_min_bytes is None  # the path table's
    env = {"NCCL_CORE_TWO_SHOT_MIN_BYTES": str(256 << 10)}
    assert env_settings(env) == {"two_shot_min_bytes": 256 << 10}
    assert make_options(None, env=env).two_shot_min_bytes == 256 << 10
    assert make_options(None, env={"NCCL_CORE_TWO_SHOT_MIN_BYTES": "0"}).two_shot_min_bytes == 0
    with pytest.raises(ValueError, match="NCCL_CORE_TWO_SHOT_MIN_BYTES"):
        env_settings({"NCCL_CORE_TWO_SHOT_MIN_BYTES": "-1"})


def test_one_way_size_defaults_and_environment():
    from nccl_core_backend.options import make_options

    assert make_options(None, env={}).one_way_max_bytes is None  # the path table's
    env = {"NCCL_CORE_ONE_WAY_MAX_BYTES": str(16 << 10)}
    assert env_settings(env) == {"one_way_max_bytes": 16 << 10}
    assert make_options(None, env=env).one_way_max_bytes == 16 << 10
    assert make_options(None, env={"NCCL_CORE_ONE_WAY_MAX_BYTES": "0"}).one_way_max_bytes == 0
    with pytest.raises(ValueError, match="NCCL_CORE_ONE_WAY_MAX_BYTES"):
        env_settings({"NCCL_CORE_ONE_WAY_MAX_BYTES": "-1"})


def test_push_ctas_out_of_range_is_refused():
    from nccl_core_backend import Options

    opts = Options()
    for bad in (0, -1, 129):
        with pytest.raises(ValueError, match="push_ctas must be in 1..128"):
            opts.push_ctas = bad
    opts.push_ctas = 128
    assert opts.push_ctas == 128


# --- timing, NaN check, torch's own options ------------------------------


@pytest.mark.parametrize("name", ["TORCH_NCCL_ENABLE_TIMING", "NCCL_CORE_ENABLE_TIMING"])
def test_timing_from_env(name):
    assert env_settings({name: "1"}) == {"enable_timing": True}
    assert make_options(env={name: "1"}).enable_timing is True


@pytest.mark.parametrize("name", ["TORCH_NCCL_NAN_CHECK", "NCCL_CORE_NAN_CHECK"])
def test_nan_check_from_env(name):
    assert env_settings({name: "yes"}) == {"nan_check": True}
    assert make_options(env={name: "1"}).nan_check is True
    assert make_options(env={name: "1"}).nan_check_strict is False


def test_nan_check_strict_from_env():
    assert env_settings({"NCCL_CORE_NAN_CHECK": "Strict"}) == {"nan_check": True,
                                                               "nan_check_strict": True}
    o = make_options(env={"NCCL_CORE_NAN_CHECK": "strict", "TORCH_NCCL_NAN_CHECK": "0"})
    assert o.nan_check is True and o.nan_check_strict is True
    # torch's variable knows no strict mode: a typo is refused, not guessed
    with pytest.raises(ValueError, match="TORCH_NCCL_NAN_CHECK"):
        env_settings({"TORCH_NCCL_NAN_CHECK": "strict"})


def test_timing_and_nan_check_are_off_by_default():
    o = make_options(env={})
    assert o.enable_timing is False and o.nan_check is False


def _torch_nccl_options():
    dist = pytest.importorskip("torch.distributed")
    if not hasattr(dist, "ProcessGroupNCCL"):
        pytest.skip("this torch was built without NCCL: no ProcessGroupNCCL.Options")
    return dist.ProcessGroupNCCL.Options()


def test_torch_nccl_options_map_onto_ours():
    t = _torch_nccl_options()
    t.is_high_priority_stream = True
    t._timeout = timedelta(seconds=77)
    t.config.max_ctas = 16
    t.config.min_ctas = 4
    t.config.cga_cluster_size = 2
    t.config.blocking = 0
    t.config.net_name = "Socket"
    o = make_options(t, env={})
    assert isinstance(o, Options)
    assert o.is_high_priority_stream and o._timeout == timedelta(seconds=77)
    assert (o.max_ctas, o.min_ctas, o.cga_cluster_size) == (16, 4, 2)
    assert o.blocking is False and o.net_name == "Socket"
    assert o.split_share == INT_MIN and o.cta_policy == INT_MIN  # unset stays NCCL's default
    assert t.config.max_ctas == 16  # torch's object is not touched


def test_torch_nccl_options_defaults_leave_ours():
    o = make_options(_torch_nccl_options(), env={})
    d = make_options(env={})
    for name in ("blocking", "max_ctas", "min_ctas", "cga_cluster_size", "split_share",
                 "is_high_priority_stream", "net_name", "comm_name"):
        assert getattr(o, name) == getattr(d, name), name


@pytest.mark.parametrize("field", ["nvls_ctas", "collnet_enable", "max_p2p_peers"])
def test_torch_nccl_config_fields_we_cannot_honour(field):
    t = _torch_nccl_options()
    if not hasattr(t.config, field):
        pytest.skip(f"this torch's NCCLConfig has no {field}")
    setattr(t.config, field, 1)
    with pytest.raises(ValueError, match=field):
        make_options(t, env={})


def test_blocking_config_must_be_zero_or_one():
    t = _torch_nccl_options()
    t.config.blocking = 5
    with pytest.raises(ValueError, match="blocking"):
        make_options(t, env={})


def test_unhonoured_torch_variables_warn_once(recwarn):
    from nccl_core_backend import options

    env = {"TORCH_NCCL_DUMP_ON_TIMEOUT": "1", "TORCH_NCCL_ENABLE_TIMING": "1"}
    options._warned_env.discard("TORCH_NCCL_DUMP_ON_TIMEOUT")
    with pytest.warns(UserWarning, match="TORCH_NCCL_DUMP_ON_TIMEOUT"):
        assert options.warn_unhonoured_env(env) == ["TORCH_NCCL_DUMP_ON_TIMEOUT"]
    assert options.warn_unhonoured_env(env) == []  # once per process


def test_enable_reconfigure_carries_over_and_is_copied():
    # torch >= 2.15: the group waits for dist._reconfigure (backend/reconfigure.cpp).
    t = _torch_nccl_options()
    if not hasattr(t, "enable_reconfigure") or not hasattr(Options(), "enable_reconfigure"):
        pytest.skip("this torch has no enable_reconfigure (torch < 2.15)")
    assert make_options(t, env={}).enable_reconfigure is False
    t.enable_reconfigure = True
    o = make_options(t, env={})
    assert o.enable_reconfigure is True
    assert copy.copy(o).enable_reconfigure is True and make_options(o, env={}).enable_reconfigure is True


@pytest.mark.parametrize("field", ["lazy_init", "use_pg_for_symm_mem_rendezvous"])
def test_torch_nccl_options_we_cannot_honour(field):
    t = _torch_nccl_options()
    if not hasattr(t, field):
        pytest.skip(f"this torch's ProcessGroupNCCL.Options has no {field}")
    setattr(t, field, True)
    with pytest.raises(ValueError, match=field):
        make_options(t, env={})
