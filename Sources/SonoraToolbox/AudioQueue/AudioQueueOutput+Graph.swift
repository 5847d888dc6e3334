import SonoraCore
import SonoraUnits

/// The hidden mixer in front of "the graph the caller gives": the mix of every attached
/// queue becomes the render callback of one node input of the caller's `AudioGraph`
/// (AUGraphSetNodeInputCallback), so the queues play through that node and whatever follows
/// it. The graph's head pulls the mix: its I/O unit on the device's I/O thread once the
/// caller starts the graph, or the caller's offline render (`renderOffline`). Queues attach
/// with `setOutput(_:)` as to a device's output.
///
/// The output neither starts nor stops the graph (a queue's start only starts the queue;
/// the caller runs the graph) and does not watch its device (its events are the graph's
/// owner's, as with a queue's own I/O unit). Device time is the graph's render time stamps'.
extension AudioQueueOutput {
    /// An output feeding `input` of `node` in `graph`, mixing at `sampleRate` and `channels`
    /// (the input's stream format: set here while the graph is not initialized, else it must
    /// be canonical Float32 at that rate and channel count). On an initialized graph the new
    /// callback takes effect through `graph.update()`, which this calls.
    public convenience init(graph: AudioGraph, node: AudioGraph.Node, input: Int = 0, sampleRate: Double, channels: Int, maximumQueues: Int = 64) throws(AudioError) {
        try self.init(host: .graph(graph, node: node, input: input), sampleRate: sampleRate, channels: channels, maximumQueues: maximumQueues)
    }

    /// Installs `mixer` as the node input's render callback; returns the slice frames the
    /// node renders at most.
    static func feed(_ graph: AudioGraph, node: AudioGraph.Node, input: Int, from mixer: AudioQueueMixer, sampleRate: Double, channels: Int) throws(AudioError) -> Int {
        let place = "AudioQueueOutput: \(graph.name(node)) input \(input)"
        let destination: AudioUnit
        do {
            destination = try graph.unit(node)
        } catch {
            throw AudioError(.queueInvalidDevice, "\(place): \(error.message)")
        }
        let wanted = StreamFormat.canonical(sampleRate: sampleRate, channels: channels)
        do throws(AudioError) {
            if graph.isInitialized {
                let format = try destination.streamFormat(scope: .input, element: input)
                guard format.sampleRate == sampleRate, Int(format.channelsPerFrame) == channels, format == wanted else {
                    throw AudioError(.formatNotSupported, "the input takes \(format), not the mix's \(wanted) (set it before initializing the graph)")
                }
            } else {
                try destination.setStreamFormat(wanted, scope: .input, element: input)
            }
            try graph.setRenderCallback(mixer, node: node, input: input)
            if graph.isInitialized { try graph.update() }
        } catch {
            throw AudioError(.queueInvalidDevice, "\(place): \(error.message)")
        }
        return max(destination.maximumFramesPerSlice, 64)
    }
}
