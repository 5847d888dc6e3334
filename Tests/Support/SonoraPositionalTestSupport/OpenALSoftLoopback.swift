import COpenALSoft

/// Why OpenAL Soft could not be set up or refused a call, with the call's name.
public struct OpenALSoftError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// OpenAL Soft's loopback device (ALC_SOFT_loopback) with one context: it renders float32
/// stereo on the caller's thread into the caller's buffer, so a test or a benchmark drives
/// it exactly as it drives Sonora's `ALDevice.loopback`.
///
/// The context is made current per thread (ALC_EXT_thread_local_context) before every call,
/// so several loopbacks can live in one process whose tests run on several threads.
/// HRTF is off unless asked for (OpenAL Soft would otherwise decide by its config); the
/// output limiter is off so levels above full scale are measured as they are mixed.
public final class OpenALSoftLoopback {
    public let frequency: Int
    /// Whether OpenAL Soft reports HRTF on (ALC_HRTF_STATUS_SOFT), not only whether it was asked.
    public let isHRTFActive: Bool
    let device: OpaquePointer
    let context: OpaquePointer

    public init(frequency: Int = 48_000, hrtf: Bool = false) throws(OpenALSoftError) {
        guard let device = alcLoopbackOpenDeviceSOFT(nil) else {
            throw OpenALSoftError("alcLoopbackOpenDeviceSOFT: OpenAL Soft gave no loopback device")
        }
        guard alcIsRenderFormatSupportedSOFT(device, ALCsizei(frequency), ALC_STEREO_SOFT, ALC_FLOAT_SOFT) == ALC_TRUE else {
            alcCloseDevice(device)
            throw OpenALSoftError("alcIsRenderFormatSupportedSOFT: float32 stereo at \(frequency) Hz is not supported")
        }
        let attributes: [ALCint] = [
            ALC_FORMAT_CHANNELS_SOFT, ALC_STEREO_SOFT,
            ALC_FORMAT_TYPE_SOFT, ALC_FLOAT_SOFT,
            ALC_FREQUENCY, ALCint(frequency),
            ALC_HRTF_SOFT, hrtf ? ALC_TRUE : ALC_FALSE,
            ALC_OUTPUT_LIMITER_SOFT, ALC_FALSE,
            0,
        ]
        guard let context = alcCreateContext(device, attributes) else {
            let error = alcGetError(device)
            alcCloseDevice(device)
            throw OpenALSoftError("alcCreateContext: ALC error 0x\(String(error, radix: 16))")
        }
        self.device = device
        self.context = context
        self.frequency = frequency
        var status: ALCint = 0
        alcGetIntegerv(device, ALC_HRTF_SOFT, 1, &status)
        isHRTFActive = status == ALC_TRUE
        if hrtf && !isHRTFActive {
            alcDestroyContext(context)
            alcCloseDevice(device)
            throw OpenALSoftError("ALC_HRTF_SOFT: HRTF was asked for and OpenAL Soft did not enable it")
        }
    }

    deinit {
        if alcGetThreadContext() == context { alcSetThreadContext(nil) }
        alcDestroyContext(context)
        alcCloseDevice(device)
    }

    /// Makes this context the calling thread's current one; every AL call below goes to it.
    public func makeCurrent() {
        if alcGetThreadContext() != context { alcSetThreadContext(context) }
    }

    /// Renders `frames` interleaved stereo float frames on the calling thread.
    public func render(into interleaved: UnsafeMutablePointer<Float>, frames: Int) {
        makeCurrent()
        alcRenderSamplesSOFT(device, interleaved, ALCsizei(frames))
    }

    /// The library's version string (AL_VERSION), e.g. "1.1 ALSOFT 1.19.1".
    public var version: String {
        makeCurrent()
        return alGetString(AL_VERSION).map { String(cString: $0) } ?? "unknown"
    }

    /// The name of the resampler sources use unless told otherwise (AL_SOFT_source_resampler).
    public var defaultResamplerName: String {
        makeCurrent()
        let index = alGetInteger(AL_DEFAULT_RESAMPLER_SOFT)
        return alGetStringiSOFT(AL_RESAMPLER_NAME_SOFT, index).map { String(cString: $0) } ?? "unknown"
    }

    /// Throws the AL error pending after `call`, naming it (alGetError also clears it).
    public func check(_ call: @autoclosure () -> String) throws(OpenALSoftError) {
        let error = alGetError()
        guard error == AL_NO_ERROR else {
            throw OpenALSoftError("\(call()): AL error 0x\(String(error, radix: 16))")
        }
    }
}
