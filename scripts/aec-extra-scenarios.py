#!/usr/bin/env python3
"""Sonora's own echo-canceller scenarios, beside aec-eval's seven (issue 8: "other
speech, rooms, delays and drift it has not seen").  Same generator (imported from
../shared/aec-eval/gen_signals.py), same file layout, so aec_eval.py scores them:

  g_other_voice   other far-end voice (en-gb+m1, slower), RT60 250 ms, delay 50 ms
  h_rt600         RT60 600 ms, delay 30 ms
  i_delay300      bulk delay 300 ms, RT60 200 ms
  j_drift_p100    loudspeaker clock +100 ppm against the microphone's, RT60 150 ms, delay 40 ms
  k_drift_m100    -100 ppm
  l_dt_rt400      double talk (other voices) in RT60 400 ms, delay 60 ms
  m_change_room   echo path change at 10 s, same delay: RT60 300 ms, 40 ms -> another RT60 300 ms room
  n_change_delay  echo path change at 10 s with a delay jump: RT60 200 ms, 50 ms -> 250 ms
  o_dt_short_room double talk in a short room (RT60 100 ms, 30 ms) the filter learns deeply;
                  the near end (other voice) 6 dB louder than the echo
  p_dt_deep       double talk at SER 0 dB in the same short room, talkers starting while the
                  far end talks over a deeply converged filter
  48k/a1_48k      a1 (RT60 150 ms, 20 ms) at 48 kHz      } 48 kHz: score with
  48k/b_dt_48k    double talk at 48 kHz                   } --fs 48000 (ERLE/DT gain/SDR)

Usage: python3 aec-extra-scenarios.py --out DIR [--harness ../shared/aec-eval] [--only NAME,...]
"""
import argparse, os, sys
import numpy as np
from scipy.signal import resample

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--harness", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../shared/aec-eval"))
ap.add_argument("--only", default="", help="comma-separated scenario names (default: all)")
a = ap.parse_args()
only = set(filter(None, a.only.split(",")))
sys.path.insert(0, a.harness)
import gen_signals as g
from aec_scenario_files import write_scenario


def write(root, name, desc, fs, ref, echo, near, noise, extra):
    ge = 10 ** ((g.ECHO_DB - g.active_level_db(echo)) / 20)
    echo = echo * ge
    mic = near + echo + noise
    assert np.max(np.abs(mic)) < 0.99
    meta = dict(name=name, description=desc, fs=fs, n=len(ref), duration_s=len(ref) / fs, echo_gain=ge, **extra)
    write_scenario(os.path.join(root, name), ref, mic, near, echo, noise, meta, g.write_raw)
    print(f"{name}: {desc}")


def build(fs, root, names):
    if only:
        names = {k: v for k, v in names.items() if k in only}
        if not names:
            return
    g.FS = fs
    rng = np.random.default_rng(4321)
    far = g.set_level(g.speech_track(g.FAR_TEXT, g.FAR_VOICE, 26.0, rng), g.REF_DB)
    other = g.set_level(g.speech_track(g.FAR_TEXT[::-1], ["-v", "en-gb+m1", "-s", "140", "-p", "30"], 26.0, rng), g.REF_DB)
    noise = g.pink_noise(26 * fs, rng) * 10 ** (g.NOISE_DB / 20)
    D = 20 * fs
    def near_track(voice, start_times, total):
        near = np.zeros(total)
        segs = []
        for k, st in enumerate(start_times):
            s = np.concatenate([g.espeak(g.NEAR_TEXT[(2 * k) % 6], voice), np.zeros(int(0.25 * fs)), g.espeak(g.NEAR_TEXT[(2 * k + 1) % 6], voice)])
            i0 = int(st * fs)
            s = s[:total - i0]
            near[i0:i0 + len(s)] = s
            segs.append([st, st + len(s) / fs])
        return g.set_level(near, g.NEAR_DB), segs
    if "g_other_voice" in names:
        ref = other[:D]
        write(root, "g_other_voice", names["g_other_voice"], fs, ref, g.echo_of(ref, g.synth_rir(0.25, 0.05, seed=21)), np.zeros(D), noise[:D].copy(), {})
    if "h_rt600" in names:
        ref = far[:D]
        write(root, "h_rt600", names["h_rt600"], fs, ref, g.echo_of(ref, g.synth_rir(0.6, 0.03, seed=22)), np.zeros(D), noise[:D].copy(), {})
    if "i_delay300" in names:
        ref = far[:D]
        write(root, "i_delay300", names["i_delay300"], fs, ref, g.echo_of(ref, g.synth_rir(0.2, 0.3, seed=23)), np.zeros(D), noise[:D].copy(), {})
    for name, ppm in (("j_drift_p100", 100), ("k_drift_m100", -100)):
        if name in names:
            ref = far[:D]
            # The loudspeaker plays the reference on its own clock: ppm faster means the
            # played signal is the reference compressed in time.
            played = resample(far[:D + fs], int(round((D + fs) / (1 + ppm * 1e-6))))[:D]
            write(root, name, names[name], fs, ref, g.echo_of(played, g.synth_rir(0.15, 0.04, seed=24)), np.zeros(D), noise[:D].copy(), dict(drift_ppm=ppm))
    if "l_dt_rt400" in names:
        T = 24 * fs
        ref = other[:T]
        near, segs = near_track(["-v", "en-us+f2", "-s", "160", "-p", "55"], [5.0, 11.5, 18.0], T)
        write(root, "l_dt_rt400", names["l_dt_rt400"], fs, ref, g.echo_of(ref, g.synth_rir(0.4, 0.06, seed=25)), near, noise[:T].copy(), dict(near_segments_s=segs))
    for name, first, second in (("m_change_room", (0.3, 0.04, 26), (0.3, 0.04, 27)),
                                ("n_change_delay", (0.2, 0.05, 28), (0.2, 0.25, 29))):
        if name in names:
            ref = (other if name == "m_change_room" else far)[:D]
            e1 = g.echo_of(ref, g.synth_rir(*first[:2], seed=first[2]))
            e2 = g.echo_of(ref, g.synth_rir(*second[:2], seed=second[2]))
            e2 *= np.sqrt(np.sum(e1 ** 2) / np.sum(e2 ** 2))
            ic = 10 * fs
            write(root, name, names[name], fs, ref, np.concatenate([e1[:ic], e2[ic:]]), np.zeros(D), noise[:D].copy(),
                  dict(change_time_s=10.0))
    if "o_dt_short_room" in names:
        T = 24 * fs
        ref = far[:T]
        near, segs = near_track(["-v", "en-gb+f3", "-s", "150", "-p", "60"], [8.0, 14.5], T)
        near *= 10 ** (6 / 20)
        write(root, "o_dt_short_room", names["o_dt_short_room"], fs, ref, g.echo_of(ref, g.synth_rir(0.1, 0.03, seed=30)), near, noise[:T].copy(),
              dict(near_segments_s=segs))
    if "p_dt_deep" in names:
        T = 24 * fs
        ref = far[:T]
        near, segs = near_track(["-v", "en-us+m3", "-s", "165", "-p", "40"], [7.0, 13.3, 19.1], T)
        write(root, "p_dt_deep", names["p_dt_deep"], fs, ref, g.echo_of(ref, g.synth_rir(0.1, 0.03, seed=31)), near, noise[:T].copy(),
              dict(near_segments_s=segs))
    if "a1_48k" in names:
        ref = far[:D]
        write(root, "a1_48k", names["a1_48k"], fs, ref, g.echo_of(ref, g.synth_rir(0.15, 0.02, seed=11)), np.zeros(D), noise[:D].copy(), {})
    if "b_dt_48k" in names:
        T = 24 * fs
        ref = far[:T]
        near, segs = near_track(g.NEAR_VOICE, [6.0, 12.5, 19.0], T)
        write(root, "b_dt_48k", names["b_dt_48k"], fs, ref, g.echo_of(ref, g.synth_rir(0.15, 0.02, seed=11)), near, noise[:T].copy(), dict(near_segments_s=segs))


build(16000, a.out, {
    "g_other_voice": "other far-end voice (en-gb+m1), RT60 250 ms, delay 50 ms",
    "h_rt600": "RT60 600 ms, delay 30 ms",
    "i_delay300": "bulk delay 300 ms, RT60 200 ms",
    "j_drift_p100": "loudspeaker clock +100 ppm, RT60 150 ms, delay 40 ms",
    "k_drift_m100": "loudspeaker clock -100 ppm, RT60 150 ms, delay 40 ms",
    "l_dt_rt400": "double talk (other voices), RT60 400 ms, delay 60 ms",
    "m_change_room": "echo path change at 10 s, same delay 40 ms: RT60 300 ms room -> another",
    "n_change_delay": "echo path change at 10 s, delay 50 ms -> 250 ms, RT60 200 ms",
    "o_dt_short_room": "double talk, near end 6 dB over the echo, RT60 100 ms, delay 30 ms",
    "p_dt_deep": "double talk at SER 0 dB over a deeply converged filter, RT60 100 ms, delay 30 ms",
})
build(48000, os.path.join(a.out, "48k"), {
    "a1_48k": "a1 at 48 kHz: RT60 150 ms, delay 20 ms",
    "b_dt_48k": "double talk at 48 kHz, RT60 150 ms, delay 20 ms",
})
