/*
 * sonoraloop.c - alsa-lib external I/O (ioplug) PCM plugin: an in-process,
 * bit-exact, clocked loopback "wire" for Sonora tests.
 *
 * Build:  cc -O2 -Wall -Wextra -fPIC -DPIC -shared \
 *            -o libasound_module_pcm_sonoraloop.so sonoraloop.c -lasound -lpthread
 * (PIC is also defined below if the build system does not pass -DPIC.)
 *
 * Config:
 *   pcm_type.sonoraloop { lib "/path/libasound_module_pcm_sonoraloop.so" }
 *   pcm.NAME {
 *       type sonoraloop
 *       loop "LOOPNAME"          # wire name shared by PCMs of this process (default "default")
 *       rate 48000               # optional: only this rate      (default 8000..192000)
 *       format "S16_LE"          # optional: only this format    (default all supported)
 *       channels 2               # optional: only this count     (default 1..32)
 *       min_period_bytes 16      # optional (default 16)
 *       periods_max 16           # optional (default 16, min 2)
 *       skew_ppm 0               # optional int/float: clock = (1 + N*1e-6) x nominal
 *       granularity 32           # optional: the pointer moves in steps of N frames (1..8192)
 *       room "D:G D:G ..."       # optional, capture only: a known room in the loop
 *       noise_db -70             # optional, with room: white noise added (RMS dBFS)
 *       near "/path/talker.f32"  # optional, with room: a near-end talker (raw FLOAT_LE mono)
 *   }
 *
 * Room: a capture PCM with `room` records sum_t G_t * played[F - D_t] (D_t frames after
 * the loop's own round trip, up to 64 taps, gains linear) instead of played[F], plus
 * deterministic white noise at `noise_db` if given - so an echo canceller can be tested
 * end to end through ALSA against a room it is not told about.  With `near`, the file's
 * samples are added to every channel at loop frame F = 0, 1, ... (a near-end talker the
 * canceller must pass while it removes the echo; silence after the file ends).  It needs FLOAT_LE (pin it
 * with `format "FLOAT_LE"`); the longest delay must fit the wire (a quarter of it).
 *
 * Design: a playback and a capture PCM opened in one process with the same
 * loop name share a wire (registry keyed by name, refcounted, pthread mutex
 * taken only by control operations).  What playback plays at loop frame F is
 * what capture records at loop frame F; unwritten frames read as zero.  The
 * wire is a power-of-two ring (>= 4x the largest buffer) indexed by absolute
 * loop frame; the playback publishes "written up to" with release/acquire
 * atomics, so the data path (transfer/pointer/poll) takes no lock.  One clock
 * per loop: the first stream to start sets t0 (CLOCK_MONOTONIC); every stream
 * advances in whole periods, hw = floor((now - t0)/period_time) * period_size,
 * counted from the period in which that stream started (a stream joining a
 * running loop keeps t0; started in the same period => exact round trip of
 * buffer_size).  With skew_ppm != 0 a stream uses its own t0 and a scaled
 * period_time.  All four access types are served through the transfer
 * callback: mmap_rw is left at 0 because alsa-lib 1.2.8's ioplug never calls
 * transfer for RW_* access when mmap_rw = 1 (measured: capture stayed silent);
 * with mmap_rw = 0 ioplug still provides a local buffer for MMAP_* access and
 * calls transfer at mmap_commit (playback) / mmap_begin (capture), and calls
 * it straight from writei/writen/readi/readn for RW_* access.  Playback data
 * written before start is staged and moved onto the wire at start, when its
 * loop position becomes known.  A timerfd armed on period boundaries is the
 * poll descriptor (poll_revents drains it, re-arms it and maps it to POLLOUT/
 * POLLIN/POLLERR).  Xruns: playback hw >= appl, capture hw - appl > buffer ->
 * pointer returns -EPIPE; prepare recovers.  The pointer is reported as the
 * absolute position modulo the PCM boundary (SND_PCM_IOPLUG_FLAG_BOUNDARY_WA)
 * so that a capture exactly one buffer behind is not mistaken for empty.
 * Limits: one playback PCM per loop (a second gets -EBUSY), any number of
 * captures; snd_pcm_reset/pause on a running stream are not supported.
 *
 * Granularity: by default the pointer moves in whole periods (an interrupt-driven view).
 * With `granularity N` it moves every N frames, as a card's DMA pointer read at any time
 * does (counted from the loop clock's origin; N must not exceed the period), so a reader
 * that wakes on its own timer sees the period fill up.  Poll wake-ups still come when a
 * period is complete (the first N-frame step at or after the period boundary).
 *
 * Unplugging (for tests of a device that vanishes, from outside the process): with
 * SONORALOOP_UNPLUG_DIR set, loop NAME is unplugged while the file $SONORALOOP_UNPLUG_DIR/NAME
 * exists: opening fails with -ENODEV and a running stream's pointer reports -ENODEV (checked
 * once per period, at poll), as a USB card pulled out does.
 *
 * Stalling (for tests of a hung driver, eg. a supervisor's watchdog): while the file
 * $SONORALOOP_UNPLUG_DIR/NAME.stall exists, the thread that asks a stream of loop NAME for
 * its poll events blocks in the plugin (checked once per period, at poll), as a wedged
 * driver blocks its caller; removing the file lets it go on (it then finds an xrun).
 */
#define _GNU_SOURCE
#ifndef PIC
#define PIC 1 /* always a dlopen()ed module: select alsa's dynamic SND_DLSYM_BUILD_VERSION */
#endif
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/timerfd.h>
#include <alsa/asoundlib.h>
#include <alsa/pcm_external.h>

#define SL_MAX_CH 32
#define SL_MAX_TAPS 64
#define SL_MAX_ROOM_DELAY (1u << 18)
#define SL_MAX_PERIOD_BYTES (1u << 22)
#define SL_MAX_BUFFER_BYTES (1u << 24)

typedef struct sl_loop {
	struct sl_loop *next;
	char *name;
	int refs, has_playback, nconfigured, nrunning;
	unsigned room_frames;             /* longest room delay of any PCM on the loop */
	snd_pcm_format_t format;          /* pinned while nconfigured > 0 */
	unsigned channels, rate, frame_bits;
	snd_pcm_uframes_t period;
	unsigned char *wire;              /* ring of wire_frames frames */
	uint64_t wire_frames;             /* power of two */
	uint64_t t0;                      /* loop clock origin (ns) while nrunning > 0 */
	_Atomic uint64_t wbase, written;  /* playback's valid loop-frame range [wbase, written) */
	_Atomic uint64_t read_upto;       /* capture progress: only orders reader before writer */
} sl_loop_t;

typedef struct {
	snd_pcm_ioplug_t io;
	sl_loop_t *loop;
	int tfd, configured;
	atomic_int running;               /* read lock-free by poll_revents */
	unsigned periods_max;
	double skew_ppm;
	unsigned granularity;             /* pointer step in frames, 0: whole periods */
	long double pt_ns;                /* own period time (skew applied) */
	uint64_t t0, k0, off, last_hw;    /* own clock origin, start period, loop-frame offset */
	snd_pcm_uframes_t avail_min, boundary;
	unsigned char *stage;             /* playback data written before start */
	snd_pcm_channel_area_t wire_areas[SL_MAX_CH], stage_areas[SL_MAX_CH];
	unsigned ntaps;                   /* room taps (capture), 0: a plain wire */
	unsigned tap_delay[SL_MAX_TAPS];
	float tap_gain[SL_MAX_TAPS];
	float noise_rms;
	uint32_t rng;
	float *near;                      /* near-end talker (capture with a room), or NULL */
	uint64_t near_frames;
	char *unplug_path;                /* $SONORALOOP_UNPLUG_DIR/LOOP, or NULL */
	char stall_path[4096];            /* $SONORALOOP_UNPLUG_DIR/LOOP.stall, or "" */
	atomic_int unplugged;
} sl_t;

/* $SONORALOOP_UNPLUG_DIR/LOOP when the variable is set (malloc'd), else NULL. */
static char *unplug_path_for(const char *loop)
{
	const char *dir = getenv("SONORALOOP_UNPLUG_DIR");
	char *path;
	if (!dir || !*dir)
		return NULL;
	if (asprintf(&path, "%s/%s", dir, loop) < 0)
		return NULL;
	return path;
}

static const snd_pcm_format_t sl_formats[] = {
	SND_PCM_FORMAT_S16_LE, SND_PCM_FORMAT_S16_BE, SND_PCM_FORMAT_S24_LE,
	SND_PCM_FORMAT_S24_BE, SND_PCM_FORMAT_S24_3LE, SND_PCM_FORMAT_S24_3BE,
	SND_PCM_FORMAT_S32_LE, SND_PCM_FORMAT_S32_BE, SND_PCM_FORMAT_FLOAT_LE,
	SND_PCM_FORMAT_FLOAT_BE };
#define SL_NFORMATS (sizeof(sl_formats) / sizeof(sl_formats[0]))

static pthread_mutex_t sl_lock = PTHREAD_MUTEX_INITIALIZER;
static sl_loop_t *sl_loops;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct timespec ns_ts(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
	return ts;
}

static void timer_set(sl_t *s, int flags, uint64_t value_ns, uint64_t interval_ns)
{
	struct itimerspec its = { ns_ts(interval_ns), ns_ts(value_ns) };
	timerfd_settime(s->tfd, flags, &its, NULL);
}

/* Whole periods elapsed on this stream's clock since its origin t0. */
static uint64_t periods_at(const sl_t *s, uint64_t now)
{
	return now <= s->t0 ? 0 : (uint64_t)((long double)(now - s->t0) / s->pt_ns);
}

/* Absolute stream frames the "device" has processed since start: whole periods, or
 * whole grains of `granularity` frames on the same clock. */
static uint64_t hw_abs(const sl_t *s)
{
	if (!s->running)
		return s->last_hw;
	uint64_t now = now_ns();
	if (s->granularity) {
		uint64_t p = s->io.period_size, g = s->granularity;
		uint64_t frames = now <= s->t0 ? 0
			: (uint64_t)((long double)(now - s->t0) * p / s->pt_ns);
		uint64_t start = s->k0 * p;
		frames = frames / g * g;
		return frames > start ? frames - start : 0;
	}
	uint64_t k = periods_at(s, now);
	return (k > s->k0 ? k - s->k0 : 0) * s->io.period_size;
}

/* Arm the timer at the boundary after the current period (with a granularity: the first
 * step at or after it), then periodically. */
static void arm_next(sl_t *s)
{
	uint64_t k = periods_at(s, now_ns());
	uint64_t p = s->io.period_size, target = (k + 1) * p;
	if (s->granularity)
		target = (target + s->granularity - 1) / s->granularity * s->granularity;
	/* +2 ns guards against rounding of the non-integer period time */
	uint64_t at = s->t0 + (uint64_t)((long double)target * s->pt_ns / p) + 2;
	timer_set(s, TFD_TIMER_ABSTIME, at, (uint64_t)(s->pt_ns + 0.5L));
}

/* ---- registry (control path only, under sl_lock) ---- */

static sl_loop_t *loop_ref(const char *name, snd_pcm_stream_t stream)
{
	sl_loop_t *l;
	pthread_mutex_lock(&sl_lock);
	for (l = sl_loops; l; l = l->next)
		if (!strcmp(l->name, name))
			break;
	if (!l && (l = calloc(1, sizeof(*l))) && !(l->name = strdup(name))) {
		free(l);
		l = NULL;
	} else if (l && !l->refs) {
		l->next = sl_loops;
		sl_loops = l;
	}
	if (l && stream == SND_PCM_STREAM_PLAYBACK) {
		if (l->has_playback) {
			SNDERR("sonoraloop: loop \"%s\" already has a playback PCM open", name);
			l = (sl_loop_t *)-1;
			goto out;
		}
		l->has_playback = 1;
	}
	if (l)
		l->refs++;
out:
	pthread_mutex_unlock(&sl_lock);
	return l;
}

/* Called with sl_lock held. */
static void loop_unref(sl_loop_t *l, snd_pcm_stream_t stream)
{
	sl_loop_t **pp;
	if (stream == SND_PCM_STREAM_PLAYBACK)
		l->has_playback = 0;
	if (--l->refs > 0)
		return;
	for (pp = &sl_loops; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	free(l->wire);
	free(l->name);
	free(l);
}

/* Called with sl_lock held. */
static void stream_stop(sl_t *s)
{
	sl_loop_t *l = s->loop;
	if (s->running) {
		s->last_hw = hw_abs(s);
		s->running = 0;
		if (s->io.stream == SND_PCM_STREAM_PLAYBACK) {
			atomic_store_explicit(&l->written, 0, memory_order_release);
			atomic_store_explicit(&l->wbase, 0, memory_order_release);
		}
		if (--l->nrunning == 0)
			l->t0 = 0;
	}
	timer_set(s, 0, 0, 0);
}

/* Called with sl_lock held. */
static void stream_unconfigure(sl_t *s)
{
	stream_stop(s);
	if (s->configured) {
		s->configured = 0;
		s->loop->nconfigured--;
	}
	free(s->stage);
	s->stage = NULL;
}

/* ---- ioplug callbacks ---- */

static int sl_hw_params(snd_pcm_ioplug_t *io, snd_pcm_hw_params_t *params)
{
	sl_t *s = io->private_data;
	sl_loop_t *l = s->loop;
	unsigned fbits = (unsigned)snd_pcm_format_physical_width(io->format) * io->channels;
	uint64_t need = 4 * ((uint64_t)io->buffer_size + l->room_frames), frames = 1;
	int err = 0;
	(void)params;

	if (s->granularity > io->period_size) {
		SNDERR("sonoraloop: granularity %u frames is more than the period (%lu frames)",
		       s->granularity, (unsigned long)io->period_size);
		return -EINVAL;
	}
	if (s->ntaps && io->format != SND_PCM_FORMAT_FLOAT_LE) {
		SNDERR("sonoraloop: a room needs format FLOAT_LE (pin it with format \"FLOAT_LE\"), not %s",
		       snd_pcm_format_name(io->format));
		return -EINVAL;
	}
	pthread_mutex_lock(&sl_lock);
	stream_unconfigure(s);
	if (l->nconfigured > 0) {
		if (l->format != io->format || l->channels != io->channels ||
		    l->rate != io->rate || l->period != io->period_size) {
			SNDERR("sonoraloop: loop \"%s\" runs %s/%uch/%uHz/period %lu; this PCM "
			       "asked %s/%uch/%uHz/period %lu - both sides must match",
			       l->name, snd_pcm_format_name(l->format), l->channels, l->rate,
			       (unsigned long)l->period, snd_pcm_format_name(io->format),
			       io->channels, io->rate, (unsigned long)io->period_size);
			err = -EINVAL;
		} else if (4 * ((uint64_t)io->buffer_size + l->room_frames) > l->wire_frames) {
			SNDERR("sonoraloop: loop \"%s\": buffer of %lu frames too large for the "
			       "wire (%llu frames, max buffer %llu)", l->name,
			       (unsigned long)io->buffer_size, (unsigned long long)l->wire_frames,
			       (unsigned long long)l->wire_frames / 4);
			err = -EINVAL;
		}
	} else {
		/* room for any buffer the partner may pick (periods_max periods,
		 * capped by the 16 MiB buffer limit), and at least 4x our buffer */
		uint64_t want = 4 * ((uint64_t)io->period_size * s->periods_max + l->room_frames);
		if (want > 4 * (uint64_t)SL_MAX_BUFFER_BYTES / (fbits / 8))
			want = 4 * (uint64_t)SL_MAX_BUFFER_BYTES / (fbits / 8);
		if (want < need)
			want = need;
		while (frames < want)
			frames <<= 1;
		if (frames != l->wire_frames || fbits != l->frame_bits) {
			free(l->wire);
			l->wire = calloc(frames, fbits / 8);
			l->wire_frames = l->wire ? frames : 0;
			if (!l->wire)
				err = -ENOMEM;
		} else {
			memset(l->wire, 0, frames * fbits / 8);
		}
		l->format = io->format;
		l->channels = io->channels;
		l->rate = io->rate;
		l->period = io->period_size;
		l->frame_bits = fbits;
		atomic_store(&l->written, 0);
		atomic_store(&l->wbase, 0);
	}
	if (!err && io->stream == SND_PCM_STREAM_PLAYBACK &&
	    !(s->stage = calloc(io->buffer_size, fbits / 8)))
		err = -ENOMEM;
	if (!err) {
		unsigned w = (unsigned)snd_pcm_format_physical_width(io->format);
		for (unsigned c = 0; c < io->channels; c++) {
			s->wire_areas[c] = (snd_pcm_channel_area_t){ l->wire, c * w, fbits };
			s->stage_areas[c] = (snd_pcm_channel_area_t){ s->stage, c * w, fbits };
		}
		s->pt_ns = (long double)io->period_size * 1e9L /
			   ((long double)io->rate * (1.0L + (long double)s->skew_ppm * 1e-6L));
		s->avail_min = io->period_size;
		s->configured = 1;
		l->nconfigured++;
	} else {
		free(s->stage);
		s->stage = NULL;
	}
	pthread_mutex_unlock(&sl_lock);
	return err;
}

static int sl_hw_free(snd_pcm_ioplug_t *io)
{
	sl_t *s = io->private_data;
	pthread_mutex_lock(&sl_lock);
	stream_unconfigure(s);
	pthread_mutex_unlock(&sl_lock);
	return 0;
}

static int sl_sw_params(snd_pcm_ioplug_t *io, snd_pcm_sw_params_t *params)
{
	sl_t *s = io->private_data;
	snd_pcm_uframes_t v;
	if (snd_pcm_sw_params_get_avail_min(params, &v) == 0)
		s->avail_min = v ? v : 1;
	if (snd_pcm_sw_params_get_boundary(params, &v) == 0 && v)
		s->boundary = v;
	return 0;
}

static int sl_prepare(snd_pcm_ioplug_t *io)
{
	sl_t *s = io->private_data;
	if (!s->configured) {
		SNDERR("sonoraloop: prepare without valid hw_params on loop \"%s\"", s->loop->name);
		return -EINVAL;
	}
	pthread_mutex_lock(&sl_lock);
	stream_stop(s);
	s->last_hw = 0;
	if (s->stage)
		memset(s->stage, 0, io->buffer_size * s->loop->frame_bits / 8);
	if (io->stream == SND_PCM_STREAM_PLAYBACK)
		timer_set(s, 0, 1, 0); /* writable right away */
	pthread_mutex_unlock(&sl_lock);
	return 0;
}

static int sl_start(snd_pcm_ioplug_t *io)
{
	sl_t *s = io->private_data;
	sl_loop_t *l = s->loop;
	uint64_t now, lk;
	long double loop_pt;

	pthread_mutex_lock(&sl_lock);
	now = now_ns();
	loop_pt = (long double)l->period * 1e9L / l->rate;
	if (l->nrunning++ == 0)
		l->t0 = now;
	lk = (uint64_t)((long double)(now - l->t0) / loop_pt);
	s->off = lk * io->period_size;
	if (s->skew_ppm != 0.0) {
		s->t0 = now;        /* independent clock */
		s->k0 = 0;
	} else {
		s->t0 = l->t0;      /* shared loop clock */
		s->k0 = lk;
	}
	s->last_hw = 0;
	s->running = 1;
	if (io->stream == SND_PCM_STREAM_PLAYBACK) {
		uint64_t n = io->appl_ptr < io->buffer_size ? io->appl_ptr : io->buffer_size;
		for (uint64_t i = 0; i < n; ) {   /* move pre-start data onto the wire */
			uint64_t idx = (s->off + i) & (l->wire_frames - 1);
			uint64_t chunk = l->wire_frames - idx < n - i ? l->wire_frames - idx : n - i;
			snd_pcm_areas_copy(s->wire_areas, idx, s->stage_areas, i,
					   io->channels, chunk, io->format);
			i += chunk;
		}
		atomic_store_explicit(&l->wbase, s->off, memory_order_release);
		atomic_store_explicit(&l->written, s->off + n, memory_order_release);
	}
	arm_next(s);
	pthread_mutex_unlock(&sl_lock);
	return 0;
}

static int sl_stop(snd_pcm_ioplug_t *io)
{
	sl_t *s = io->private_data;
	pthread_mutex_lock(&sl_lock);
	stream_stop(s);
	pthread_mutex_unlock(&sl_lock);
	return 0;
}

static snd_pcm_sframes_t sl_pointer(snd_pcm_ioplug_t *io)
{
	sl_t *s = io->private_data;
	uint64_t hw, appl = io->appl_ptr;
	int running = s->running;
	if (s->unplugged)
		return -ENODEV;
	hw = hw_abs(s);
	if (running) {
		if (io->stream == SND_PCM_STREAM_PLAYBACK ? hw >= appl
							   : hw - appl > io->buffer_size)
			return -EPIPE;
	}
	return (snd_pcm_sframes_t)(s->boundary ? hw % s->boundary : hw);
}

/* Capture through the room: sum_t G_t * wire[F - D_t] per channel (FLOAT_LE), frames
 * outside the playback's valid range read as silence, plus the noise floor. */
static snd_pcm_sframes_t sl_capture_room(sl_t *s, const snd_pcm_channel_area_t *areas,
					 snd_pcm_uframes_t offset, snd_pcm_uframes_t size)
{
	sl_loop_t *l = s->loop;
	snd_pcm_ioplug_t *io = &s->io;
	uint64_t mask = l->wire_frames - 1, half = l->wire_frames / 2;
	uint64_t base = s->off + io->appl_ptr;
	uint64_t w1 = atomic_load_explicit(&l->written, memory_order_acquire);
	uint64_t lo = atomic_load_explicit(&l->wbase, memory_order_acquire);
	const float *wire = (const float *)l->wire;
	unsigned channels = io->channels;

	if (w1 > half && lo < w1 - half)
		lo = w1 - half;
	for (uint64_t n = 0; n < size; n++) {
		uint64_t frame = base + n;
		for (unsigned c = 0; c < channels; c++) {
			float sum = 0;
			for (unsigned t = 0; s->running && t < s->ntaps; t++) {
				if (frame < s->tap_delay[t])
					continue;
				uint64_t from = frame - s->tap_delay[t];
				if (from >= lo && from < w1)
					sum += s->tap_gain[t] * wire[(from & mask) * channels + c];
			}
			if (s->running && frame < s->near_frames)
				sum += s->near[frame];
			if (s->noise_rms > 0) {
				s->rng = s->rng * 1664525u + 1013904223u;
				/* uniform in [-1, 1) has RMS 1/sqrt(3) */
				sum += s->noise_rms * 1.7320508f * ((float)(int32_t)s->rng / 2147483648.0f);
			}
			const snd_pcm_channel_area_t *a = &areas[c];
			*(float *)((char *)a->addr + (a->first + (offset + n) * a->step) / 8) = sum;
		}
	}
	atomic_store_explicit(&l->read_upto, base + size, memory_order_release);
	return size;
}

static snd_pcm_sframes_t sl_transfer(snd_pcm_ioplug_t *io, const snd_pcm_channel_area_t *areas,
				     snd_pcm_uframes_t offset, snd_pcm_uframes_t size)
{
	sl_t *s = io->private_data;
	sl_loop_t *l = s->loop;
	uint64_t mask = l->wire_frames - 1, half = l->wire_frames / 2;
	uint64_t pos = io->appl_ptr, done = 0;

	if (!size || !s->configured)
		return size;
	if (io->stream == SND_PCM_STREAM_PLAYBACK) {
		if (!s->running) {          /* before start: stage it, published by start */
			for (; done < size; ) {
				uint64_t idx = (pos + done) % io->buffer_size;
				uint64_t chunk = io->buffer_size - idx < size - done ?
						 io->buffer_size - idx : size - done;
				snd_pcm_areas_copy(s->stage_areas, idx, areas, offset + done,
						   io->channels, chunk, io->format);
				done += chunk;
			}
			return size;
		}
		uint64_t L = s->off + pos, end = L + size, w;
		/* acquire pairs with the capture's release: earlier reads of the ring
		 * slots we may now overwrite happen-before this write (TSan-clean). */
		(void)atomic_load_explicit(&l->read_upto, memory_order_acquire);
		for (; done < size; ) {
			uint64_t idx = (L + done) & mask;
			uint64_t chunk = mask + 1 - idx < size - done ? mask + 1 - idx : size - done;
			snd_pcm_areas_copy(s->wire_areas, idx, areas, offset + done,
					   io->channels, chunk, io->format);
			done += chunk;
		}
		w = atomic_load_explicit(&l->written, memory_order_relaxed);
		if (end > w)
			atomic_store_explicit(&l->written, end, memory_order_release);
		return size;
	}
	if (s->ntaps)
		return sl_capture_room(s, areas, offset, size);
	/* capture: fill [pos, pos+size) from loop frames off+pos.. */
	for (; done < size; ) {
		uint64_t L = s->off + pos + done, idx = L & mask;
		uint64_t n = mask + 1 - idx < size - done ? mask + 1 - idx : size - done;
		uint64_t w1 = atomic_load_explicit(&l->written, memory_order_acquire);
		uint64_t b = atomic_load_explicit(&l->wbase, memory_order_acquire);
		uint64_t lo = L, hi = L + n, w2;
		if (lo < b)
			lo = b;
		if (w1 > half && lo < w1 - half)
			lo = w1 - half;   /* older than half the ring: may be overwritten */
		if (hi > w1)
			hi = w1;
		if (!s->running || lo >= hi) {
			snd_pcm_areas_silence(areas, offset + done, io->channels, n, io->format);
		} else {
			if (lo > L)
				snd_pcm_areas_silence(areas, offset + done, io->channels, lo - L, io->format);
			snd_pcm_areas_copy(areas, offset + done + (lo - L), s->wire_areas, idx + (lo - L),
					   io->channels, hi - lo, io->format);
			if (hi < L + n)
				snd_pcm_areas_silence(areas, offset + done + (hi - L), io->channels,
						      L + n - hi, io->format);
			w2 = atomic_load_explicit(&l->written, memory_order_acquire);
			if (w2 < w1 || (w2 > half && lo < w2 - half)) /* torn: discard */
				snd_pcm_areas_silence(areas, offset + done, io->channels, n, io->format);
		}
		done += n;
	}
	atomic_store_explicit(&l->read_upto, s->off + pos + size, memory_order_release);
	return size;
}

static int sl_poll_revents(snd_pcm_ioplug_t *io, struct pollfd *pfd, unsigned int nfds,
			   unsigned short *revents)
{
	sl_t *s = io->private_data;
	int play = io->stream == SND_PCM_STREAM_PLAYBACK;
	unsigned short ev = 0;
	uint64_t ticks, appl = io->appl_ptr;
	(void)pfd; (void)nfds;

	while (s->stall_path[0] && access(s->stall_path, F_OK) == 0) {
		struct timespec pause = { 0, 10 * 1000 * 1000 };
		nanosleep(&pause, NULL);
	}
	if (s->unplug_path && access(s->unplug_path, F_OK) == 0) {
		s->unplugged = 1;
		*revents = POLLERR;
		return 0;
	}
	if (io->state == SND_PCM_STATE_XRUN) {
		ev = POLLERR;
	} else if (play && io->state == SND_PCM_STATE_PREPARED &&
		   io->buffer_size - appl >= s->avail_min) {
		ev = POLLOUT;   /* not started, room left: leave the timer readable */
	} else {
		if (read(s->tfd, &ticks, sizeof(ticks)) < 0)
			ticks = 0;  /* EAGAIN: nothing to drain */
		if (s->running) {
			uint64_t hw = hw_abs(s);
			uint64_t avail = play ? hw + io->buffer_size - appl : hw - appl;
			if (avail >= s->avail_min)
				ev = play ? POLLOUT : POLLIN;
			arm_next(s);
		}
	}
	*revents = ev;
	return 0;
}

static int sl_delay(snd_pcm_ioplug_t *io, snd_pcm_sframes_t *delayp)
{
	sl_t *s = io->private_data;
	uint64_t hw = hw_abs(s), appl = io->appl_ptr;
	*delayp = io->stream == SND_PCM_STREAM_PLAYBACK ? (snd_pcm_sframes_t)(appl - hw)
							: (snd_pcm_sframes_t)(hw - appl);
	return 0;
}

static int sl_close(snd_pcm_ioplug_t *io)
{
	sl_t *s = io->private_data;
	pthread_mutex_lock(&sl_lock);
	stream_unconfigure(s);
	loop_unref(s->loop, io->stream);
	pthread_mutex_unlock(&sl_lock);
	close(s->tfd);
	free(s->near);
	free(s->unplug_path);
	free(s);
	return 0;
}

/* Reads a raw FLOAT_LE mono file whole (the near-end talker) into s->near. */
static int sl_load_near(sl_t *s, const char *path)
{
	FILE *f = fopen(path, "rb");
	long bytes;
	if (!f) {
		SNDERR("sonoraloop: near \"%s\": %s", path, strerror(errno));
		return -ENOENT;
	}
	if (fseek(f, 0, SEEK_END) < 0 || (bytes = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0
	    || bytes % 4 != 0 || bytes == 0) {
		SNDERR("sonoraloop: near \"%s\" must be raw FLOAT_LE mono samples (a non-empty multiple of 4 bytes)", path);
		fclose(f);
		return -EINVAL;
	}
	s->near = malloc((size_t)bytes);
	if (!s->near || fread(s->near, 1, (size_t)bytes, f) != (size_t)bytes) {
		SNDERR("sonoraloop: near \"%s\": cannot read it", path);
		free(s->near);
		s->near = NULL;
		fclose(f);
		return -EIO;
	}
	fclose(f);
	s->near_frames = (uint64_t)bytes / 4;
	return 0;
}

static const snd_pcm_ioplug_callback_t sl_callbacks = {
	.start = sl_start, .stop = sl_stop, .pointer = sl_pointer, .transfer = sl_transfer,
	.close = sl_close, .hw_params = sl_hw_params, .hw_free = sl_hw_free,
	.sw_params = sl_sw_params, .prepare = sl_prepare, .poll_revents = sl_poll_revents,
	.delay = sl_delay,
};

static int sl_get_uint(snd_config_t *n, const char *id, unsigned *out, long min, long max)
{
	long v;
	if (snd_config_get_integer(n, &v) < 0 || v < min || v > max) {
		SNDERR("sonoraloop: %s must be an integer in %ld..%ld", id, min, max);
		return -EINVAL;
	}
	*out = (unsigned)v;
	return 0;
}

/* "D:G D:G ..." (spaces or commas between taps) into s->tap_*; errors name the token. */
static int sl_parse_room(sl_t *s, const char *room)
{
	const char *p = room;
	while (*p) {
		char *end;
		while (*p == ' ' || *p == ',' || *p == '\t')
			p++;
		if (!*p)
			break;
		const char *token = p;
		size_t length = strcspn(token, " ,\t");
		unsigned long delay = strtoul(p, &end, 10);
		if (end == p || *end != ':' || delay > SL_MAX_ROOM_DELAY) {
			SNDERR("sonoraloop: room tap \"%.*s\": expected DELAY:GAIN with DELAY 0..%u frames",
			       (int)length, token, SL_MAX_ROOM_DELAY);
			return -EINVAL;
		}
		p = end + 1;
		double gain = strtod(p, &end);
		if (end == p || (*end && *end != ' ' && *end != ',' && *end != '\t') || !(gain >= -16 && gain <= 16)) {
			SNDERR("sonoraloop: room tap \"%.*s\": expected a gain in -16..16 after the colon",
			       (int)length, token);
			return -EINVAL;
		}
		if (s->ntaps == SL_MAX_TAPS) {
			SNDERR("sonoraloop: room has more than %d taps", SL_MAX_TAPS);
			return -EINVAL;
		}
		s->tap_delay[s->ntaps] = (unsigned)delay;
		s->tap_gain[s->ntaps] = (float)gain;
		s->ntaps++;
		p = end;
	}
	if (!s->ntaps) {
		SNDERR("sonoraloop: room has no taps");
		return -EINVAL;
	}
	return 0;
}

SND_PCM_PLUGIN_DEFINE_FUNC(sonoraloop)
{
	snd_config_iterator_t i, next;
	const char *loopname = "default";
	unsigned rate = 0, channels = 0, minpb = 16, pmax = 16, granularity = 0;
	snd_pcm_format_t format = SND_PCM_FORMAT_UNKNOWN;
	double skew = 0.0, noise_db = 0.0;
	const char *room = NULL, *near = NULL;
	int has_noise = 0;
	unsigned formats[SL_NFORMATS], nformats = 0;
	sl_t *s;
	int err;
	(void)root;

	snd_config_for_each(i, next, conf) {
		snd_config_t *n = snd_config_iterator_entry(i);
		const char *id, *str;
		if (snd_config_get_id(n, &id) < 0)
			continue;
		if (!strcmp(id, "comment") || !strcmp(id, "type") || !strcmp(id, "hint"))
			continue;
		if (!strcmp(id, "loop")) {
			if (snd_config_get_string(n, &loopname) < 0 || !*loopname) {
				SNDERR("sonoraloop: loop must be a non-empty string");
				return -EINVAL;
			}
		} else if (!strcmp(id, "rate")) {
			if (sl_get_uint(n, id, &rate, 8000, 192000) < 0)
				return -EINVAL;
		} else if (!strcmp(id, "channels")) {
			if (sl_get_uint(n, id, &channels, 1, SL_MAX_CH) < 0)
				return -EINVAL;
		} else if (!strcmp(id, "min_period_bytes")) {
			if (sl_get_uint(n, id, &minpb, 1, 1 << 20) < 0)
				return -EINVAL;
		} else if (!strcmp(id, "periods_max")) {
			if (sl_get_uint(n, id, &pmax, 2, 1024) < 0)
				return -EINVAL;
		} else if (!strcmp(id, "granularity")) {
			if (sl_get_uint(n, id, &granularity, 1, 8192) < 0)
				return -EINVAL;
		} else if (!strcmp(id, "skew_ppm")) {
			if (snd_config_get_ireal(n, &skew) < 0 || skew <= -1e6 || skew > 1e6) {
				SNDERR("sonoraloop: skew_ppm must be a number > -1000000");
				return -EINVAL;
			}
		} else if (!strcmp(id, "room")) {
			if (snd_config_get_string(n, &room) < 0) {
				SNDERR("sonoraloop: room must be a string of DELAY:GAIN taps, e.g. \"0:0.5 240:-0.2\"");
				return -EINVAL;
			}
		} else if (!strcmp(id, "near")) {
			if (snd_config_get_string(n, &near) < 0 || !*near) {
				SNDERR("sonoraloop: near must be the path of a raw FLOAT_LE mono file");
				return -EINVAL;
			}
		} else if (!strcmp(id, "noise_db")) {
			if (snd_config_get_ireal(n, &noise_db) < 0 || noise_db > 0 || noise_db < -200) {
				SNDERR("sonoraloop: noise_db must be a number in -200..0 (dBFS RMS)");
				return -EINVAL;
			}
			has_noise = 1;
		} else if (!strcmp(id, "format")) {
			unsigned k;
			format = snd_config_get_string(n, &str) < 0 ? SND_PCM_FORMAT_UNKNOWN
								    : snd_pcm_format_value(str);
			for (k = 0; k < SL_NFORMATS && sl_formats[k] != format; k++)
				;
			if (k == SL_NFORMATS) {
				SNDERR("sonoraloop: unsupported format (use S16/S24/S24_3/S32/FLOAT, LE or BE)");
				return -EINVAL;
			}
		} else {
			SNDERR("sonoraloop: unknown config key \"%s\"", id);
			return -EINVAL;
		}
	}

	{
		/* A loop unplugged from outside (see the header) cannot be opened. */
		char *unplug = unplug_path_for(loopname);
		if (unplug && access(unplug, F_OK) == 0) {
			free(unplug);
			return -ENODEV;
		}
		if (!(s = calloc(1, sizeof(*s)))) {
			free(unplug);
			return -ENOMEM;
		}
		s->unplug_path = unplug;
		if (unplug && (size_t)snprintf(s->stall_path, sizeof(s->stall_path), "%s.stall", unplug) >= sizeof(s->stall_path))
			s->stall_path[0] = 0;
	}
	if (room && (err = sl_parse_room(s, room)) < 0) {
		free(s->unplug_path);
		free(s);
		return err;
	}
	if (has_noise && !s->ntaps) {
		SNDERR("sonoraloop: noise_db needs a room");
		free(s->unplug_path);
		free(s);
		return -EINVAL;
	}
	if (near && !s->ntaps) {
		SNDERR("sonoraloop: near needs a room");
		free(s->unplug_path);
		free(s);
		return -EINVAL;
	}
	if (near && (err = sl_load_near(s, near)) < 0) {
		free(s->unplug_path);
		free(s);
		return err;
	}
	if (s->ntaps && stream != SND_PCM_STREAM_CAPTURE) {
		SNDERR("sonoraloop: a room belongs on the capture PCM");
		free(s->near);
		free(s->unplug_path);
		free(s);
		return -EINVAL;
	}
	s->noise_rms = has_noise ? (float)pow(10.0, noise_db / 20.0) : 0.0f;
	s->rng = 0x2545F491u;
	s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (s->tfd < 0) {
		err = -errno;
		free(s->near);
		free(s->unplug_path);
		free(s);
		return err;
	}
	s->loop = loop_ref(loopname, stream);
	if (s->loop == NULL || s->loop == (sl_loop_t *)-1) {
		err = s->loop ? -EBUSY : -ENOMEM;
		close(s->tfd);
		free(s->near);
		free(s->unplug_path);
		free(s);
		return err;
	}
	if (s->ntaps) {
		unsigned longest = 0;
		for (unsigned t = 0; t < s->ntaps; t++)
			if (s->tap_delay[t] > longest)
				longest = s->tap_delay[t];
		pthread_mutex_lock(&sl_lock);
		if (longest > s->loop->room_frames)
			s->loop->room_frames = longest;
		pthread_mutex_unlock(&sl_lock);
	}
	s->periods_max = pmax;
	s->skew_ppm = skew;
	s->granularity = granularity;
	s->boundary = 0;
	s->io.version = SND_PCM_IOPLUG_VERSION;
	s->io.name = "Sonora loopback";
	s->io.flags = SND_PCM_IOPLUG_FLAG_MONOTONIC | SND_PCM_IOPLUG_FLAG_BOUNDARY_WA;
	s->io.poll_fd = s->tfd;
	s->io.poll_events = POLLIN;
	s->io.mmap_rw = 0;
	s->io.callback = &sl_callbacks;
	s->io.private_data = s;

	err = snd_pcm_ioplug_create(&s->io, name, stream, mode);
	if (err < 0) {
		pthread_mutex_lock(&sl_lock);
		loop_unref(s->loop, stream);
		pthread_mutex_unlock(&sl_lock);
		close(s->tfd);
		free(s->near);
		free(s->unplug_path);
		free(s);
		return err;
	}
	static const unsigned accesses[] = {
		SND_PCM_ACCESS_MMAP_INTERLEAVED, SND_PCM_ACCESS_MMAP_NONINTERLEAVED,
		SND_PCM_ACCESS_RW_INTERLEAVED, SND_PCM_ACCESS_RW_NONINTERLEAVED };
	for (unsigned k = 0; k < SL_NFORMATS; k++)
		if (format == SND_PCM_FORMAT_UNKNOWN || format == sl_formats[k])
			formats[nformats++] = (unsigned)sl_formats[k];
	if ((err = snd_pcm_ioplug_set_param_list(&s->io, SND_PCM_IOPLUG_HW_ACCESS, 4, accesses)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_list(&s->io, SND_PCM_IOPLUG_HW_FORMAT, nformats, formats)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_minmax(&s->io, SND_PCM_IOPLUG_HW_CHANNELS,
			channels ? channels : 1, channels ? channels : SL_MAX_CH)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_minmax(&s->io, SND_PCM_IOPLUG_HW_RATE,
			rate ? rate : 8000, rate ? rate : 192000)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_minmax(&s->io, SND_PCM_IOPLUG_HW_PERIOD_BYTES,
			minpb, SL_MAX_PERIOD_BYTES)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_minmax(&s->io, SND_PCM_IOPLUG_HW_PERIODS, 2, pmax)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_minmax(&s->io, SND_PCM_IOPLUG_HW_BUFFER_BYTES,
			2 * minpb, SL_MAX_BUFFER_BYTES)) < 0) {
		snd_pcm_ioplug_delete(&s->io);   /* calls sl_close */
		return err;
	}
	*pcmp = s->io.pcm;
	return 0;
}

SND_PCM_PLUGIN_SYMBOL(sonoraloop) /* the macro supplies the semicolon */
