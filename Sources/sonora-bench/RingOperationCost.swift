import CJack
import SonoraCore

/// Per-operation cost of the rings, free of the two-thread hand-over: one thread writes a
/// chunk and reads it back, over and over, through Sonora's `SampleRing` (non-interleaved)
/// and through JACK's ring (the same frames interleaved). What this measures is what a call
/// costs — cursors, region bookkeeping, checks, the copies — which is what limits a ring at
/// small chunks; on a loaded machine it is also far steadier than the two-thread rows, since
/// it takes the fastest of its trials and needs no second core.
extension RingBenchmark {
    /// Nanoseconds per write + read of `chunk` stereo frames: (sample ring, JACK), fastest of `trials`.
    func operationCost(chunk: Int, trials: Int) throws -> (sampleRing: Double, jack: Double) {
        let ring = try SampleRing(channelCount: channels, capacity: ringFrames)
        let source = try OwnedAudioBufferList(channelCount: channels, frameCapacity: chunk)
        let destination = try OwnedAudioBufferList(channelCount: channels, frameCapacity: chunk)
        let frameBytes = channels * 4
        guard let jack = jack_ringbuffer_create(ringFrames * frameBytes) else {
            throw BenchmarkFailure("jack_ringbuffer_create failed")
        }
        defer { jack_ringbuffer_free(jack) }
        let bytes = chunk * frameBytes
        let jackSource = UnsafeMutablePointer<CChar>.allocate(capacity: bytes)
        let jackDestination = UnsafeMutablePointer<CChar>.allocate(capacity: bytes)
        jackSource.initialize(repeating: 1, count: bytes)
        defer {
            jackSource.deallocate()
            jackDestination.deallocate()
        }
        let rounds = max(1000, (4 << 20) / bytes)
        var best = (sampleRing: Double.infinity, jack: Double.infinity)
        let input = source.list
        let output = destination.list
        for _ in 0..<trials {
            var start = HostTime.now
            for _ in 0..<rounds {
                _ = ring.write(from: input)
                _ = ring.read(into: output)
            }
            best.sampleRing = min(best.sampleRing, Double(HostTime.now - start) / Double(rounds))
            start = HostTime.now
            for _ in 0..<rounds {
                _ = jack_ringbuffer_write(jack, jackSource, bytes)
                _ = jack_ringbuffer_read(jack, jackDestination, bytes)
            }
            best.jack = min(best.jack, Double(HostTime.now - start) / Double(rounds))
        }
        return best
    }
}
