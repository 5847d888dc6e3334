import SonoraCore
import SonoraUnits

extension BuildContext {
    /// Gives the graph its transport, as the `transport:` section says (stopped, 120 BPM, 4/4 without one).
    mutating func attachTransport() {
        let settings = configuration.transport ?? PipelineConfiguration.TransportSettings()
        do throws(AudioError) {
            let transport = try Transport(
                sampleRate: format.sampleRate, tempo: settings.tempo, timeSignature: settings.timeSignature,
                isPlaying: settings.isPlaying)
            try graph.attachTransport(transport)
        } catch {
            self.error(settings.location ?? fileLocation, "transport: \(error.message)")
        }
    }
}
