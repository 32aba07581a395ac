import pytest

from execution.devices import device_for_process, pin_this_process


def test_pool_processes_take_one_gpu_each_in_turn():
    assert [device_for_process("0,1,2", i) for i in range(5)] == ["0", "1", "2", "0", "1"]
    assert device_for_process(" 3 ", 7) == "3"


def test_pinning_sets_cuda_visible_devices_only_when_gpus_are_listed():
    env = {"VARBOARD_GPUS": "4,5"}
    assert pin_this_process(1, env) == "5" and env["CUDA_VISIBLE_DEVICES"] == "5"
    untouched = {}
    assert pin_this_process(0, untouched) is None and "CUDA_VISIBLE_DEVICES" not in untouched


@pytest.mark.parametrize("gpus, index, message", [(",", 0, "VARBOARD_GPUS must list"), ("0", -1, "never negative")])
def test_bad_gpu_lists_are_named(gpus, index, message):
    with pytest.raises(ValueError, match=message):
        device_for_process(gpus, index)
