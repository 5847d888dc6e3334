"""Writes one echo-canceller scenario in aec-eval's layout (shared by Sonora's scenario
scripts): ref and mic as float32 and int16, near/echo/noise as float32 (the metrics need
them), and meta.json."""
import json, os


def write_scenario(directory, ref, mic, near, echo, noise, meta, write_raw):
    """`write_raw(path, signal, fmt)` is aec-eval's gen_signals.write_raw."""
    os.makedirs(directory, exist_ok=True)
    for key, value in dict(ref=ref, mic=mic).items():
        write_raw(os.path.join(directory, f"{key}.f32"), value, "f32")
        write_raw(os.path.join(directory, f"{key}.s16"), value, "s16")
    for key, value in dict(near=near, echo=echo, noise=noise).items():
        write_raw(os.path.join(directory, f"{key}.f32"), value, "f32")
    with open(os.path.join(directory, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
