/// A change to the transport, from the control side to the realtime side.
enum TransportChange: BitwiseCopyable {
    case play
    case stop
    case locate(beat: Double)
    case tempo(Double)
    case timeSignature(TimeSignature)
}

/// A change and the graph sample time it takes effect at (-1: the next cycle's first frame).
struct TransportCommand: BitwiseCopyable {
    var change: TransportChange
    var sampleTime: Int64
}
