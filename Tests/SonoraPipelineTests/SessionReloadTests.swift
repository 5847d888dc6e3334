import Foundation
import Logging
@testable import SonoraPipeline
import SonoraHAL
import Testing

/// The session server is made when the appliance starts: a SIGHUP reload that changes the
/// `session` section is refused, and says so, rather than silently keeping the old policy.
@Suite("Reload and the session section")
struct SessionReloadTests {
    @Test("a reload refuses a changed session section, leaving the pipeline as it was; an unchanged one reloads")
    func sessionChange() throws {
        let folder = ConfigurationDefectTests.folder
        let config = folder + "/reload-session.yaml"
        func write(_ duck: String, gain: String = "-3 dB") {
            let text = """
                nodes:
                  - {id: clients, kind: clients}
                  - {id: trim, kind: Gain, parameters: {gain: \(gain)}}
                connections:
                  - {from: clients, to: trim}
                  - {from: trim, to: output}
                session:
                  roles:
                    - {name: alert, priority: 20, ducks: [media], duck_db: \(duck)}
                    - {name: media, priority: 10}

                """
            FileManager.default.createFile(atPath: config, contents: Data(text.utf8))
        }
        write("-12")
        let pipeline = try PipelineBuilder.build(try ConfigurationParser.parse(contentsOf: config), target: .offline)
        let controller = PipelineController(pipeline: pipeline, device: try TimerDevice(configuration: .init(), mode: .offline), configPath: config, logger: Logger(label: "test"))
        defer { controller.pipeline.graph.uninitialize() }
        write("-20")
        let problems = controller.reload()
        #expect(problems.map(\.message) == ["session changed; it takes effect on restart, not on reload (nothing was changed)"])
        #expect(problems.first?.location.line == 8)  // the section's first key
        write("-12", gain: "-6 dB")
        #expect(controller.reload().isEmpty)
    }
}
