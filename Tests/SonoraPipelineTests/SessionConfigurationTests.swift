import Foundation
import Logging
import SonoraHAL
import SonoraPipeline
import SonoraTestSupport
import Testing

/// A pipeline with `session` (the lines after `session:`), as `problems()` reports it.
func sessionProblems(_ session: String, control: String = "") -> [String] {
    problems("""
        nodes:
          - {id: t, kind: ToneGenerator}
        connections:
          - {from: t, to: output}
        \(control)session:
        \(session)
        """)
}

@Suite("Pipeline configs: the session section")
struct SessionConfigurationTests {
    @Test("a session section parses into typed values")
    func typed() throws {
        let text = """
            nodes:
              - {id: t, kind: ToneGenerator}
            connections:
              - {from: t, to: output}
            session:
              socket: run/server.sock
              group: audio
              max_clients: 32
              fade_ms: 40
              roles:
                - {name: intercom, priority: 30, interrupts: [media, assistant], may_record: true}
                - {name: alert, priority: 20, ducks: media, duck_db: -9.5 dB, attack_ms: 20, release_ms: 400}
                - {name: assistant, priority: 15}
                - {name: media, priority: 10, may_record: no}
              categories:
                playback: media
                playAndRecord: intercom
            """
        let configuration = try ConfigurationParser.parse(text, file: configsFolder + "/session.yaml")
        let session = try #require(configuration.session)
        #expect(session.socketPath == "run/server.sock" && configuration.sessionSocketPath == configsFolder + "/run/server.sock")
        #expect(session.group == "audio" && session.maxClients == 32 && session.fadeMilliseconds == 40)
        #expect(session.roles == [
            SessionRole(name: "intercom", priority: 30, interrupts: ["media", "assistant"], mayRecord: true),
            SessionRole(name: "alert", priority: 20, ducks: ["media"], duckDB: -9.5, attackMilliseconds: 20, releaseMilliseconds: 400),
            SessionRole(name: "assistant", priority: 15),
            SessionRole(name: "media", priority: 10, mayRecord: false),
        ])
        #expect(session.categoryRoles == [.playback: "media", .playAndRecord: "intercom"])
        #expect(session.socketLocation?.line == 6 && session.groupLocation?.line == 7)
        let policy = SessionPolicy(session, sampleRate: 48000)
        #expect(policy.frames(milliseconds: policy.fadeMilliseconds) == 1920 && policy.role(named: "alert")?.duckDB == -9.5)
    }

    @Test("no session section: none; defaults for what is left out")
    func defaults() throws {
        let plain = try ConfigurationParser.parse("nodes:\n  - {id: t, kind: tone}\nconnections:\n  - {from: t, to: output}\n", file: configsFolder + "/x.yaml")
        #expect(plain.session == nil && plain.sessionSocketPath == nil)
        let empty = try ConfigurationParser.parse("nodes:\n  - {id: t, kind: tone}\nconnections:\n  - {from: t, to: output}\nsession: {roles: [{name: media, priority: 0}]}\n", file: configsFolder + "/x.yaml")
        let session = try #require(empty.session)
        #expect(session.maxClients == 64 && session.fadeMilliseconds == 30 && session.socketPath == nil && session.group == nil)
        #expect(session.roles == [SessionRole(name: "media", priority: 0, duckDB: -12, attackMilliseconds: 50, releaseMilliseconds: 300, mayRecord: true)])
    }

    @Test("every form problem of a session, each at its position, with suggestions")
    func formProblems() {
        let found = sessionProblems("""
              sockett: x.sock
              fade_ms: 5000
              max_clients: 0
              roles:
                - {name: intercom, priority: 30, interrupts: [media, intercom, alrt, media]}
                - {name: alert, priority: 2000, ducks: media, duck_db: 3}
                - {name: media, priority: 10, duck_db: -120, attack_ms: -1, release_ms: 20000, may_record: maybe}
                - {name: media, priority: 5}
                - {priority: 5}
                - {name: low, priority: 1, interrupts: [media], ducks: [low], colour: red}
                - {name: "9lives", priority: 1}
              categories:
                playbak: media
                record: intercomm
                ambient: [media]
            """)
        #expect(found == [
            "6:3: unknown key 'sockett' in session; did you mean 'socket'? (allowed: socket, group, max_clients, fade_ms, roles, categories)",
            "7:12: session.fade_ms 5000 is out of range 0…2000",
            "8:16: session.max_clients 0 is out of range 1…256",
            "10:58: role 'intercom' interrupts itself; a session never interrupts its own role",
            "10:68: role 'intercom': interrupts names no role 'alrt'; did you mean 'alert'? (roles: intercom, alert, media, low)",
            "10:74: role 'intercom': interrupts names 'media' twice",
            "11:31: role 'alert': priority 2000 is out of range 0…1000",
            "11:60: role 'alert': duck_db 3 must be below 0 (a duck lowers the others)",
            "12:44: role 'media': duck_db -120 is below -96 dB, the deepest duck (for silence, interrupt instead)",
            "12:61: role 'media': attack_ms -1 is out of range 0…10000",
            "12:77: role 'media': release_ms 20000 is out of range 0…10000",
            "12:96: role 'media': may_record must be true or false, not 'maybe'",
            "13:7: role 'media' is defined twice (first at 12:7)",
            "14:7: a session role needs a `name`",
            "15:45: role 'low' (priority 1) cannot interrupt 'media' (priority 10): a role interrupts only roles of lower priority",
            "15:61: role 'low' ducks itself; a session never ducks its own role",
            "15:67: unknown key 'colour' in a session role (allowed: name, priority, interrupts, ducks, duck_db, attack_ms, release_ms, may_record)",
            "16:14: role name '9lives' must start with a letter, hold only letters, digits, '_', '-', '.', and be at most 64 characters",
            "18:5: session.categories: 'playbak' is not a category; did you mean 'playback'? (categories: ambient, soloAmbient, playback, record, playAndRecord, audioProcessing)",
            "19:13: session.categories.record: no role 'intercomm'; did you mean 'intercom'? (roles: intercom, alert, media, low)",
            "20:14: session.categories.ambient must be a single value, not a list or mapping",
        ])
    }

    @Test("wrong shapes are named, not guessed")
    func shapes() {
        #expect(problems("nodes:\n  - {id: t, kind: tone}\nconnections:\n  - {from: t, to: output}\nsession: [roles]\n")
            == ["5:10: session must be a mapping (key: value lines)"])
        #expect(sessionProblems("  roles: {name: media}") == ["6:10: session.roles must be a list of roles such as {name: media, priority: 10}"])
        #expect(sessionProblems("  roles: [media]") == ["6:11: a role must be a mapping such as {name: media, priority: 10}"])
        #expect(sessionProblems("  roles: [{name: media}]") == ["6:11: role 'media' needs a `priority` (0…1000; higher wins)"])
        #expect(sessionProblems("  roles: [{name: media, priority: 1, ducks: {a: b}}]") == ["6:45: role 'media': ducks entry must be a single value, not a list or mapping"])
        #expect(sessionProblems("  categories: {playback: media}") == ["6:26: session.categories.playback: no role 'media' (session.roles defines none)"])
        #expect(sessionProblems("  socket: \"\"\n  group: \"\"") == [
            "6:11: session.socket is empty; give a path (or leave it out for the default)",
            "7:10: session.group is empty; give a group name (or leave it out: only this user may attach)",
        ])
    }

    @Test("the socket and the group are checked on this machine, at their positions (check, run)")
    func machineChecks() throws {
        try withTemporaryFolder { temporary in
            let folder = temporary.path
            let file = folder + "/session.yaml"
            func check(_ text: String) throws -> [String] {
                let configuration = try ConfigurationParser.parse("nodes:\n  - {id: t, kind: tone}\nconnections:\n  - {from: t, to: output}\n" + text, file: file)
                return PipelineBuilder.check(configuration).map { "\($0.location.line):\($0.location.column): \($0.message)" }
            }
            // The server makes the last folder (as RuntimeDirectory= does), not a deeper path.
            #expect(try check("session: {socket: missing/server.sock}\n") == [])
            #expect(try check("session: {socket: missing/deeper/server.sock}\n") == ["5:19: session.socket: folder \(folder)/missing/deeper does not exist, and \(folder)/missing is not a folder it can be made in"])
            _ = FileManager.default.createFile(atPath: folder + "/taken", contents: Data("mine".utf8))
            #expect(try check("session:\n  socket: taken\n") == ["6:11: session.socket: \(folder)/taken is a regular file, not a socket; it is never replaced — choose another path"])
            #expect(FileManager.default.contents(atPath: folder + "/taken") == Data("mine".utf8))
            #expect(try check("control: {socket: a.sock}\nsession: {socket: ./a.sock}\n") == ["6:19: session.socket is the control socket's path (\(folder)/a.sock); give each its own"])
            #expect(try check("session:\n  group: no-such-group-sonora\n") == ["6:10: session.group: no group 'no-such-group-sonora' on this machine (`getent group` lists them)"])
            #expect(try check("session: {socket: server.sock, group: audio}\n") == [])
            #expect(try check("session: {group: \"0\"}\n") == [])
            // Offline (`render`) the session server does not run: nothing of the machine is checked.
            let configuration = try ConfigurationParser.parse("nodes:\n  - {id: t, kind: tone}\nconnections:\n  - {from: t, to: output}\nsession: {group: no-such-group-sonora}\n", file: file)
            #expect(PipelineBuilder.check(configuration, offline: true) == [])
        }
        #expect(SessionGroup.id(of: "root") == 0 && SessionGroup.id(of: "no-such-group-sonora") == nil)
    }

    @Test("the schema describes every session key, role key and category")
    func schema() throws {
        let object = try JSONSerialization.jsonObject(with: Data(ConfigurationSchema.json.utf8)) as? [String: Any]
        let session = (object?["properties"] as? [String: Any])?["session"] as? [String: Any]
        let properties = try #require(session?["properties"] as? [String: Any])
        #expect(Set(properties.keys) == ["socket", "group", "max_clients", "fade_ms", "roles", "categories"])
        let role = ((properties["roles"] as? [String: Any])?["items"] as? [String: Any])
        let roleKeys = Set(((role?["properties"] as? [String: Any]) ?? [:]).keys)
        #expect(roleKeys == ["name", "priority", "interrupts", "ducks", "duck_db", "attack_ms", "release_ms", "may_record"])
        #expect(role?["required"] as? [String] == ["name", "priority"])
        let categories = Set((((properties["categories"] as? [String: Any])?["properties"] as? [String: Any]) ?? [:]).keys)
        #expect(categories == Set(SessionCategory.names))
    }

    @Test("docs/pipelines.md documents every session key, role key and category")
    func documented() throws {
        let docs = try String(contentsOfFile: PackageRoot.path("docs/pipelines.md"), encoding: .utf8)
        for key in ["socket", "group", "max_clients", "fade_ms", "roles", "categories"] { #expect(docs.contains("`session.\(key)`"), "session.\(key)") }
        for key in ["name", "priority", "interrupts", "ducks", "duck_db", "attack_ms", "release_ms", "may_record"] { #expect(docs.contains("`\(key)`"), "\(key)") }
        for category in SessionCategory.names { #expect(docs.contains("`\(category)`"), "\(category)") }
        #expect(docs.contains("## `session`") && docs.contains("| `session` | no |"))
    }

    @Test("Configs/appliance-policy.yaml: intercom > alert > media, and it decides as the issue says")
    func appliancePolicyExample() throws {
        let configuration = try ConfigurationParser.parse(contentsOf: configsFolder + "/appliance-policy.yaml")
        #expect(PipelineBuilder.check(configuration).map(\.description) == [])
        let session = try #require(configuration.session)
        #expect(session.roles.map(\.name) == ["intercom", "alert", "media"])
        #expect(session.roles.map(\.priority) == session.roles.map(\.priority).sorted(by: >))
        #expect(session.categoryRoles[.playback] == "media" && session.categoryRoles[.playAndRecord] == "intercom")
        var policy = SessionPolicy(session, sampleRate: configuration.engine.sampleRate)
        policy.attach(pid: 1, name: "player")
        policy.attach(pid: 2, name: "doorphone")
        policy.attach(pid: 3, name: "chime")
        #expect(policy.activate(pid: 1, category: .playback, options: [], role: nil) == .granted([]))
        #expect(policy.activate(pid: 3, category: .ambient, options: [], role: "alert") == .granted([.duck(pid: 1, gainDB: -12, rampFrames: 2400)]))
        #expect(policy.activate(pid: 2, category: .playAndRecord, options: [], role: nil) == .granted([.interrupt(pid: 1, fadeFrames: 1440)]))
        #expect(policy.deactivate(pid: 2, notifyOthers: true) == [.resume(pid: 1, shouldResume: true, fadeFrames: 1440)])
        #expect(policy.deactivate(pid: 3, notifyOthers: true) == [.restore(pid: 1, rampFrames: 14400)])
        #expect(policy.mayRecord(pid: 1)?.contains("does not record") == true)
    }

    @Test("save writes the session section back and it reads back the same")
    func saveRoundTrip() throws {
        let text = """
            nodes:
              - {id: t, kind: tone}
            connections:
              - {from: t, to: output}
            session:
              socket: "my server.sock"
              group: audio
              fade_ms: 25
              roles:
                - {name: intercom, priority: 30, interrupts: [media]}
                - {name: alert, priority: 20, ducks: [media], duck_db: -9.5, attack_ms: 10, release_ms: 120, may_record: false}
                - {name: media, priority: 10}
              categories: {playback: media, record: intercom}
            """
        try withTemporaryFolder { temporary in
            let folder = temporary.path
            let configuration = try ConfigurationParser.parse(text, file: folder + "/in.yaml")
            let pipeline = try PipelineBuilder.build(configuration, target: .offline)
            defer { pipeline.graph.uninitialize() }
            let controller = PipelineController(pipeline: pipeline, device: try TimerDevice(configuration: .init(), mode: .offline), configPath: configuration.file, logger: Logger(label: "test"))
            try controller.save(to: folder + "/out.yaml")
            let again = try ConfigurationParser.parse(contentsOf: folder + "/out.yaml")
            let saved = try #require(again.session)
            let original = try #require(configuration.session)
            #expect(saved.roles == original.roles && saved.categoryRoles == original.categoryRoles)
            #expect(saved.socketPath == original.socketPath && saved.group == original.group)
            #expect(saved.fadeMilliseconds == 25 && saved.maxClients == original.maxClients)
        }
    }
}
