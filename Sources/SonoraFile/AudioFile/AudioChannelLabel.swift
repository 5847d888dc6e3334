import CSndfile

/// A channel's role (`AudioChannelLabel`), with Core Audio's values.
public enum AudioChannelLabel: UInt32, Hashable, Sendable, CaseIterable {
    case left = 1, right = 2, center = 3, lfeScreen = 4, leftSurround = 5, rightSurround = 6
    case leftCenter = 7, rightCenter = 8, centerSurround = 9, leftSurroundDirect = 10, rightSurroundDirect = 11
    case topCenterSurround = 12, verticalHeightLeft = 13, verticalHeightCenter = 14, verticalHeightRight = 15
    case topBackLeft = 16, topBackCenter = 17, topBackRight = 18
    case mono = 42
    case ambisonicW = 200, ambisonicX = 201, ambisonicY = 202, ambisonicZ = 203
    case unknown = 0xFFFF_FFFF

    /// libsndfile's names for the same roles, in its enum's order.
    static let sndfileOrder: [AudioChannelLabel] = [
        .unknown, .mono, .left, .right, .center, .left, .right, .center, .centerSurround, .leftSurround, .rightSurround,
        .lfeScreen, .leftCenter, .rightCenter, .leftSurroundDirect, .rightSurroundDirect, .topCenterSurround,
        .verticalHeightLeft, .verticalHeightRight, .verticalHeightCenter, .topBackLeft, .topBackRight, .topBackCenter,
        .ambisonicW, .ambisonicX, .ambisonicY, .ambisonicZ,
    ]

    init(sndfile value: Int32) {
        self = value >= 0 && Int(value) < Self.sndfileOrder.count ? Self.sndfileOrder[Int(value)] : .unknown
    }

    var sndfileValue: Int32 {
        switch self {
        case .left: Int32(SF_CHANNEL_MAP_LEFT)
        case .right: Int32(SF_CHANNEL_MAP_RIGHT)
        default: Int32(Self.sndfileOrder.firstIndex(of: self) ?? 0)
        }
    }
}
