import CALSA
import SonoraCore

#if canImport(Glibc)
import Glibc
#endif

/// Hardware and software parameters for one PCM: what is asked, what is granted, and
/// in words why a refusal happened ("period 100 not available on jack; nearest 256").
enum PCMNegotiation {
    struct Result {
        var access: DeviceAccess
        var format: DeviceSampleFormat
        var periodFrames: Int
        var periods: Int
        var bufferFrames: Int
        var notes: [String]
    }

    static func negotiate(
        _ pcm: OpaquePointer, name: String, direction: ALSAPCM.Direction, channels: Int,
        configuration: AudioDeviceConfiguration, faults: PCMFaults
    ) throws(AudioError) -> Result {
        var params: OpaquePointer?
        snd_pcm_hw_params_malloc(&params)
        guard let params else { throw AudioError(.memoryFull, "cannot allocate hardware parameters") }
        defer { snd_pcm_hw_params_free(params) }
        let on = "\(direction.word) PCM '\(name)'"
        var status = faults.failure(.hardwareSpace)
        if status == 0 { status = snd_pcm_hw_params_any(pcm, params) }
        guard status >= 0 else { throw alsaError(.badDevice, status, "\(on): no hardware configuration (snd_pcm_hw_params_any)") }
        var notes: [String] = []

        // Access: mmap preferred; read/write is a logged fallback.
        let accesses = configuration.access.map { [$0] } ?? DeviceAccess.preferenceOrder
        guard let access = accesses.first(where: { snd_pcm_hw_params_test_access(pcm, params, $0.alsaAccess) == 0 }) else {
            let offered = DeviceAccess.preferenceOrder.filter { snd_pcm_hw_params_test_access(pcm, params, $0.alsaAccess) == 0 }
            throw AudioError(.deviceUnsupportedFormat, "access \(accesses.map(\.rawValue).joined(separator: "/")) not available on \(on); it offers \(list(offered.map(\.rawValue)))")
        }
        snd_pcm_hw_params_set_access(pcm, params, access.alsaAccess)
        if !access.isMMap && configuration.access == nil {
            notes.append("\(on) has no mmap access; using \(access.rawValue)")
        }

        // Format.
        let formats = configuration.sampleFormat.map { [$0] } ?? DeviceSampleFormat.preferenceOrder
        guard let format = formats.first(where: { snd_pcm_hw_params_test_format(pcm, params, $0.alsaFormat) == 0 }) else {
            let offered = offeredFormats(pcm, params)
            throw AudioError(.deviceUnsupportedFormat, "format \(formats.count == 1 ? formats[0].rawValue : "of Sonora's") not available on \(on); it offers \(list(offered))")
        }
        snd_pcm_hw_params_set_format(pcm, params, format.alsaFormat)

        // Channels: exact.
        if snd_pcm_hw_params_set_channels(pcm, params, UInt32(channels)) < 0 {
            var low: UInt32 = 0, high: UInt32 = 0
            snd_pcm_hw_params_get_channels_min(params, &low)
            snd_pcm_hw_params_get_channels_max(params, &high)
            throw AudioError(.deviceUnsupportedFormat, "\(channels) channels not available on \(on); it takes \(range(low, high))")
        }

        // Rate: exact, and no resampling inside alsa-lib (Sonora converts where it says so).
        snd_pcm_hw_params_set_rate_resample(pcm, params, 0)
        if snd_pcm_hw_params_set_rate(pcm, params, UInt32(configuration.sampleRate), 0) < 0 {
            var nearest = UInt32(configuration.sampleRate)
            let nearestText = nearestValue(pcm, params) { snd_pcm_hw_params_set_rate_near(pcm, $0, &nearest, nil) >= 0 } ? "\(nearest)" : "none"
            throw AudioError(.deviceUnsupportedFormat, "rate \(configuration.sampleRate) not available on \(on); nearest \(nearestText)")
        }

        // Period size and count: nearest unless exactness is required.
        var period = snd_pcm_uframes_t(configuration.periodFrames)
        var direction0: Int32 = 0
        if configuration.requiresExactPeriod {
            if snd_pcm_hw_params_set_period_size(pcm, params, period, 0) < 0 {
                var nearest = period
                let text = nearestValue(pcm, params) { snd_pcm_hw_params_set_period_size_near(pcm, $0, &nearest, nil) >= 0 } ? "\(nearest)" : "none"
                throw AudioError(.deviceUnsupportedFormat, "period \(configuration.periodFrames) not available on \(on); nearest \(text)")
            }
        } else {
            status = snd_pcm_hw_params_set_period_size_near(pcm, params, &period, &direction0)
            guard status >= 0 else { throw alsaError(.deviceUnsupportedFormat, status, "no period size near \(configuration.periodFrames) on \(on)") }
            if Int(period) != configuration.periodFrames {
                notes.append("period \(configuration.periodFrames) not available on \(on); took nearest \(period)")
            }
        }
        var periods = UInt32(configuration.periods)
        if configuration.requiresExactPeriod {
            if snd_pcm_hw_params_set_periods(pcm, params, periods, 0) < 0 {
                var nearest = periods
                let text = nearestValue(pcm, params) { snd_pcm_hw_params_set_periods_near(pcm, $0, &nearest, nil) >= 0 } ? "\(nearest)" : "none"
                throw AudioError(.deviceUnsupportedFormat, "\(configuration.periods) periods not available on \(on); nearest \(text)")
            }
        } else {
            status = snd_pcm_hw_params_set_periods_near(pcm, params, &periods, &direction0)
            guard status >= 0 else { throw alsaError(.deviceUnsupportedFormat, status, "no period count near \(configuration.periods) on \(on)") }
            if Int(periods) != configuration.periods {
                notes.append("\(configuration.periods) periods not available on \(on); took nearest \(periods)")
            }
        }
        status = faults.failure(.hardwareParameters)
        if status == 0 { status = snd_pcm_hw_params(pcm, params) }
        guard status >= 0 else { throw alsaError(.deviceUnsupportedFormat, status, "\(on) refused the configuration (snd_pcm_hw_params)") }
        var granted: snd_pcm_uframes_t = 0
        snd_pcm_hw_params_get_period_size(params, &granted, nil)
        period = granted
        var buffer: snd_pcm_uframes_t = 0
        snd_pcm_hw_params_get_buffer_size(params, &buffer)
        snd_pcm_hw_params_get_periods(params, &periods, nil)

        try software(pcm, on: on, period: period, buffer: buffer, faults: faults)
        return Result(
            access: access, format: format, periodFrames: Int(period), periods: Int(periods),
            bufferFrames: Int(buffer), notes: notes)
    }

    /// Wake at one period; never start on a threshold (the I/O thread starts both
    /// streams itself, together); stop on xrun (so xruns are seen and counted); monotonic
    /// time stamps.
    private static func software(_ pcm: OpaquePointer, on: String, period: snd_pcm_uframes_t, buffer: snd_pcm_uframes_t, faults: PCMFaults) throws(AudioError) {
        var sw: OpaquePointer?
        snd_pcm_sw_params_malloc(&sw)
        guard let sw else { throw AudioError(.memoryFull, "cannot allocate software parameters") }
        defer { snd_pcm_sw_params_free(sw) }
        var status = faults.failure(.softwareSpace)
        if status == 0 { status = snd_pcm_sw_params_current(pcm, sw) }
        guard status >= 0 else { throw alsaError(.badDevice, status, "\(on): no software parameters (snd_pcm_sw_params_current)") }
        var boundary: snd_pcm_uframes_t = 0
        snd_pcm_sw_params_get_boundary(sw, &boundary)
        snd_pcm_sw_params_set_avail_min(pcm, sw, period)
        snd_pcm_sw_params_set_start_threshold(pcm, sw, boundary)
        snd_pcm_sw_params_set_stop_threshold(pcm, sw, buffer)
        snd_pcm_sw_params_set_tstamp_mode(pcm, sw, SND_PCM_TSTAMP_ENABLE)
        snd_pcm_sw_params_set_tstamp_type(pcm, sw, SND_PCM_TSTAMP_TYPE_MONOTONIC)
        status = faults.failure(.softwareParameters)
        if status == 0 { status = snd_pcm_sw_params(pcm, sw) }
        guard status >= 0 else { throw alsaError(.badDevice, status, "\(on) refused the software parameters (snd_pcm_sw_params)") }
    }

    /// Runs `setNear` on a copy of `params` (so the original stays unrestricted).
    private static func nearestValue(_ pcm: OpaquePointer, _ params: OpaquePointer, _ setNear: (OpaquePointer) -> Bool) -> Bool {
        var copy: OpaquePointer?
        snd_pcm_hw_params_malloc(&copy)
        guard let copy else { return false }
        defer { snd_pcm_hw_params_free(copy) }
        snd_pcm_hw_params_copy(copy, params)
        return setNear(copy)
    }

    static func offeredFormats(_ pcm: OpaquePointer, _ params: OpaquePointer) -> [String] {
        var names: [String] = []
        for raw in 0...Int32(SND_PCM_FORMAT_LAST.rawValue) {
            let format = snd_pcm_format_t(rawValue: raw)
            if snd_pcm_hw_params_test_format(pcm, params, format) == 0 {
                names.append(DeviceSampleFormat.name(of: format))
            }
        }
        return names
    }

    private static func list(_ items: [String]) -> String { items.isEmpty ? "none" : items.joined(separator: ", ") }
    private static func range(_ low: UInt32, _ high: UInt32) -> String { low == high ? "\(low)" : "\(low)–\(high)" }
}
