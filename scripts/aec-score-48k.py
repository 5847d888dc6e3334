#!/usr/bin/env python3
"""Scores Sonora's canceller on the 48 kHz scenarios of aec-extra-scenarios.py.

aec_eval.py substitutes {rate}=16000 and scores at 16 kHz, so it cannot drive a 48 kHz
run. This runs `sonora voice process --rate 48000` on each scenario in DIR/48k and scores
it with aec-eval's own metrics twice:
  - full band, at 48 kHz: ERLE (aec_metrics.evaluate with fs=48000; its 320-sample frames
    are then 6.7 ms);
  - at 16 kHz, every signal (mic, output, near, echo, noise) decimated by 3 the same way:
    the double-talk columns (near-end gain, SDR, PESQ-WB) on the same scale as the 16 kHz
    bench (content above 8 kHz is not scored there).

Usage: python3 aec-score-48k.py --extra DIR --harness ../shared/aec-eval --sonora PATH [--json]
"""
import argparse, contextlib, io, json, os, subprocess, sys, tempfile
import numpy as np
from scipy.signal import resample_poly

ap = argparse.ArgumentParser()
ap.add_argument("--extra", required=True, help="the --out directory of aec-extra-scenarios.py")
ap.add_argument("--harness", required=True)
ap.add_argument("--sonora", required=True)
ap.add_argument("--json", action="store_true")
a = ap.parse_args()
sys.path.insert(0, a.harness)
from aec_metrics import evaluate

root = os.path.join(a.extra, "48k")
rows = {}
for name in sorted(os.listdir(root)):
    d = os.path.join(root, name)
    if not os.path.exists(os.path.join(d, "meta.json")):
        continue
    meta = json.load(open(os.path.join(d, "meta.json")))
    load = lambda k: np.fromfile(os.path.join(d, f"{k}.f32"), "<f4").astype(np.float64)
    mic, near, echo, noise = load("mic"), load("near"), load("echo"), load("noise")
    with tempfile.TemporaryDirectory() as work:
        out_path = os.path.join(work, "out.f32")
        r0 = os.times()
        subprocess.run([a.sonora, "voice", "process", "--rate", "48000", os.path.join(d, "mic.f32"),
                        os.path.join(d, "ref.f32"), out_path], check=True)
        r1 = os.times()
        out = np.fromfile(out_path, "<f4").astype(np.float64)
    cpu = (r1.children_user - r0.children_user + r1.children_system - r0.children_system) / (len(mic) / 48000)
    with contextlib.redirect_stdout(io.StringIO()):  # its PESQ step refuses 48 kHz, noisily
        full = evaluate(mic, out, near, echo, noise, meta, fs=48000)
    dec = lambda x: resample_poly(x, 1, 3)
    meta16 = dict(meta, fs=16000, n=len(mic) // 3)
    narrow = evaluate(dec(mic), dec(out), dec(near), dec(echo), dec(noise), meta16, fs=16000)
    row = dict(erle_conv_48k=full["erle_conv"], erle_conv_16k=narrow["erle_conv"], cpu_rt=cpu)
    for k in ("dt_near_gain_db", "dt_sdr_db", "dt_pesq_wb"):
        if narrow.get(k) is not None:
            row[k] = narrow[k]
    rows[name] = row

if a.json:
    print(json.dumps(rows, indent=1))
else:
    print("| scenario | ERLE full band (48 kHz) | ERLE ≤ 8 kHz | DT gain dB / SDR dB / PESQ-WB (≤ 8 kHz) | CPU s/s |")
    print("|---|---:|---:|---:|---:|")
    for name, r in rows.items():
        dt = (f"{r['dt_near_gain_db']:.1f} / {r['dt_sdr_db']:.1f} / {r['dt_pesq_wb']:.2f}"
              if "dt_sdr_db" in r else "–")
        print(f"| {name} | {r['erle_conv_48k']:.1f} | {r['erle_conv_16k']:.1f} | {dt} | {r['cpu_rt']:.4f} |")
