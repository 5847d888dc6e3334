import SonoraFile

/// What each channel of a stream carries (`AudioChannelLayout`): a layout tag naming a
/// standard arrangement (Stereo, Quadraphonic, 5.1 …), or a bitmap, or one label per
/// channel (`useChannelDescriptions`). Values are Core Audio's, so a ported program's
/// constants carry over. The labels are the file layer's `AudioChannelLabel` (one type
/// for the concept; it belongs in the core layer once the file layer moves it there).
public struct AudioChannelLayout: Hashable, Sendable, CustomStringConvertible {
    /// `AudioChannelLayoutTag`: the arrangement in the high 16 bits, the channel count in the low 16.
    public struct Tag: RawRepresentable, Hashable, Sendable {
        public var rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        init(_ index: UInt32, _ channels: UInt32) { rawValue = index << 16 | channels }

        public static let useChannelDescriptions = Tag(0, 0)
        public static let useChannelBitmap = Tag(1, 0)
        public static let mono = Tag(100, 1)
        public static let stereo = Tag(101, 2)
        public static let stereoHeadphones = Tag(102, 2)
        public static let matrixStereo = Tag(103, 2)
        public static let midSide = Tag(104, 2)
        public static let binaural = Tag(106, 2)
        public static let ambisonicBFormat = Tag(107, 4)
        public static let quadraphonic = Tag(108, 4)
        public static let pentagonal = Tag(109, 5)
        public static let hexagonal = Tag(110, 6)
        public static let octagonal = Tag(111, 8)
        public static let cube = Tag(112, 8)
        public static let mpeg_3_0_A = Tag(113, 3)
        public static let mpeg_4_0_A = Tag(115, 4)
        public static let mpeg_5_0_A = Tag(117, 5)
        public static let mpeg_5_1_A = Tag(121, 6)
        public static let mpeg_5_1_B = Tag(122, 6)
        public static let mpeg_5_1_C = Tag(123, 6)
        public static let mpeg_5_1_D = Tag(124, 6)
        public static let mpeg_6_1_A = Tag(125, 7)
        public static let mpeg_7_1_A = Tag(126, 8)
        public static let mpeg_7_1_C = Tag(128, 8)
        /// `DiscreteInOrder | n`: n channels with no particular roles.
        public static func discreteInOrder(_ channels: Int) -> Tag { Tag(147, UInt32(channels & 0xFFFF)) }
        public static let unknown = Tag(rawValue: 0xFFFF_0000)

        /// `AudioChannelLayoutTag_GetNumberOfChannels`.
        public var channelCount: Int { Int(rawValue & 0xFFFF) }
    }

    public var tag: Tag
    /// `AudioChannelBitmap` (bit 0 left, 1 right, 2 center, 3 LFE …), for `useChannelBitmap`.
    public var bitmap: UInt32
    /// One label per channel, for `useChannelDescriptions`.
    public var channelLabels: [AudioChannelLabel]

    public init(tag: Tag) {
        self.tag = tag
        bitmap = 0
        channelLabels = []
    }

    public init(bitmap: UInt32) {
        tag = .useChannelBitmap
        self.bitmap = bitmap
        channelLabels = []
    }

    public init(channelLabels: [AudioChannelLabel]) {
        tag = .useChannelDescriptions
        bitmap = 0
        self.channelLabels = channelLabels
    }

    /// Channels the layout describes, as Core Audio counts them.
    public var channelCount: Int {
        switch tag {
        case .useChannelDescriptions: channelLabels.count
        case .useChannelBitmap: bitmap.nonzeroBitCount
        default: tag.channelCount
        }
    }

    /// Bytes of the C struct: the 12-byte header and 20 bytes per channel description.
    public var byteSize: Int { 12 + 20 * channelLabels.count }

    public var description: String {
        switch tag {
        case .useChannelDescriptions: "channels " + channelLabels.map { "\($0)" }.joined(separator: " ")
        case .useChannelBitmap: "bitmap 0x\(String(bitmap, radix: 16))"
        default: "tag \(tag.rawValue >> 16) with \(tag.channelCount) channels"
        }
    }
}
