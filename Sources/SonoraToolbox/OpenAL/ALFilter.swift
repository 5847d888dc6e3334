import Foundation

/// An EFX filter (alGenFilters' object, as a value: OpenAL copies a filter's parameters
/// into the source when it is attached, so a value is what a source keeps). Used as a
/// source's direct filter and on each auxiliary send.
///
/// As OpenAL Soft builds them: the low-pass is a high shelf at 5 kHz and the high-pass a low
/// shelf at 250 Hz, slope 1, whose gain *at* that frequency is `gainHF` / `gainLF` (the shelf
/// itself goes to the square of it); the band-pass is both. `gain` is broadband. Gains below
/// 0.001 (−60 dB) filter as 0.001, as OpenAL Soft's do.
public struct ALFilter: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// AL_FILTER_NULL: nothing filtered.
        case null
        case lowpass, highpass, bandpass

        /// AL_FILTER_NULL 0, AL_FILTER_LOWPASS 1, AL_FILTER_HIGHPASS 2, AL_FILTER_BANDPASS 3.
        public var alValue: Int32 {
            switch self {
            case .null: 0
            case .lowpass: 1
            case .highpass: 2
            case .bandpass: 3
            }
        }
    }

    public let kind: Kind
    /// AL_…_GAIN, 0…1.
    public let gain: Float
    /// AL_LOWPASS_GAINHF / AL_BANDPASS_GAINHF, 0…1 (1 for a high-pass).
    public let gainHF: Float
    /// AL_HIGHPASS_GAINLF / AL_BANDPASS_GAINLF, 0…1 (1 for a low-pass).
    public let gainLF: Float

    /// No filtering (AL_FILTER_NULL).
    public static let null = ALFilter(kind: .null, gain: 1, gainHF: 1, gainLF: 1)

    private init(kind: Kind, gain: Float, gainHF: Float, gainLF: Float) {
        self.kind = kind
        self.gain = gain
        self.gainHF = gainHF
        self.gainLF = gainLF
    }

    /// A low-pass: `invalidValue` for a gain outside 0…1.
    public static func lowpass(gain: Float = 1, gainHF: Float = 1) throws(ALError) -> ALFilter {
        try checked(.lowpass, gain: gain, gainHF: gainHF, gainLF: 1)
    }

    public static func highpass(gain: Float = 1, gainLF: Float = 1) throws(ALError) -> ALFilter {
        try checked(.highpass, gain: gain, gainHF: 1, gainLF: gainLF)
    }

    public static func bandpass(gain: Float = 1, gainLF: Float = 1, gainHF: Float = 1) throws(ALError) -> ALFilter {
        try checked(.bandpass, gain: gain, gainHF: gainHF, gainLF: gainLF)
    }

    private static func checked(_ kind: Kind, gain: Float, gainHF: Float, gainLF: Float) throws(ALError) -> ALFilter {
        for value in [gain, gainHF, gainLF] where !(0...1).contains(value) { throw .invalidValue }
        return ALFilter(kind: kind, gain: gain, gainHF: gainHF, gainLF: gainLF)
    }

    /// The shelves' gains at their reference frequencies, in dB for the mixer (−60…0).
    var highShelfDecibels: Float { Self.shelfDecibels(kind == .lowpass || kind == .bandpass ? gainHF : 1) }
    var lowShelfDecibels: Float { Self.shelfDecibels(kind == .highpass || kind == .bandpass ? gainLF : 1) }
    /// The broadband gain (1 for the null filter).
    var broadbandGain: Float { kind == .null ? 1 : gain }

    static func shelfDecibels(_ gain: Float) -> Float {
        gain >= 1 ? 0 : max(20 * log10f(max(gain, 0.001)), -60)
    }
}
