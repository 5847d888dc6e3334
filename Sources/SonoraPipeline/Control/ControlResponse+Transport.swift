extension ControlResponse {
    /// The transport as the `transport` command reports it (after a change: once the change has
    /// taken effect, or as it stood if it is scheduled later).
    public struct TransportReading: Codable, Equatable, Sendable {
        public var playing: Bool
        public var tempo: Double
        public var meter: String
        /// Beats since the start of the timeline.
        public var beat: Double
        /// Bar (from 0) and beat within it.
        public var bar: Int64
        public var barBeat: Double
        /// Timeline frame (advances while playing).
        public var frame: Int64
        /// Graph sample time at the end of the last cycle: an `at` for an exact change counts from here.
        public var sampleTime: Int64

        enum CodingKeys: String, CodingKey {
            case playing, tempo, meter, beat, bar, frame
            case barBeat = "bar_beat", sampleTime = "sample_time"
        }
    }
}
