/// A context's creation attributes (alcCreateContext's list): nil means the default.
public struct ALContextAttributes: Sendable, Hashable {
    /// ALC_FREQUENCY: the mixing rate. The first context of a playback device sets it (the
    /// I/O unit converts to the hardware's); on a loopback device it must equal the device's.
    public var frequency: Int?
    /// ALC_REFRESH: mix updates per second (the render period of a loopback device is the
    /// caller's; kept for queries).
    public var refresh: Int?
    /// ALC_MONO_SOURCES / ALC_STEREO_SOURCES: how many sources of each kind may play at once
    /// (defaults 64 and 4: each is an input of the context's 3D mixer, prepared when the
    /// context is made; OpenAL Soft's 256 mono sources are there for the asking).
    public var monoSources: Int?
    public var stereoSources: Int?
    /// ALC_HRTF_SOFT: binaural rendering (the mixer's HRTF algorithm) on a stereo device.
    public var hrtf: Bool?
    /// ALC_MAX_AUXILIARY_SENDS (EFX): auxiliary sends per source, 0…4 (default 2, as OpenAL Soft).
    public var maxAuxiliarySends: Int?

    public init(
        frequency: Int? = nil, refresh: Int? = nil, monoSources: Int? = nil, stereoSources: Int? = nil, hrtf: Bool? = nil,
        maxAuxiliarySends: Int? = nil
    ) {
        self.frequency = frequency
        self.refresh = refresh
        self.monoSources = monoSources
        self.stereoSources = stereoSources
        self.hrtf = hrtf
        self.maxAuxiliarySends = maxAuxiliarySends
    }

    static let defaultAuxiliarySends = 2

    static let defaultMonoSources = 64
    static let defaultStereoSources = 4
    static let defaultRefresh = 50
}
