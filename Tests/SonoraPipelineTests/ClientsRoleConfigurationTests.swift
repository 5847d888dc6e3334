import SonoraPipeline
import SonoraTestSupport
import Testing

/// `clients` nodes by role: each names a role of the session section, at most one per
/// role, at most one without; mistakes are reported where they are written.
@Suite("clients nodes by role: validation")
struct ClientsRoleConfigurationTests {
    static func config(_ nodes: String) -> String {
        """
        engine: {sample_rate: 48000, period: 256}
        nodes:
        \(nodes)
          - {id: mix, kind: mixer, inputs: 2}
        connections:
          - {from: a, to: mix}
          - {from: b, to: "mix:1"}
          - {from: mix, to: output}
        session:
          roles:
            - {name: intercom, priority: 20}
            - {name: media, priority: 10}
        """
    }

    @Test("one node per role and one without: no problems")
    func valid() {
        #expect(problems(Self.config("  - {id: a, kind: clients, role: intercom}\n  - {id: b, kind: clients}")) == [])
    }

    @Test("a role the session does not have, a role taken twice, two nodes without a role: each refused at its line")
    func mistakes() {
        let unknown = problems(Self.config("  - {id: a, kind: clients, role: doorbell}\n  - {id: b, kind: clients}"))
        #expect(unknown.count == 1 && unknown[0].hasPrefix("3:") && unknown[0].contains("no role 'doorbell'") && unknown[0].contains("intercom, media"), "\(unknown)")
        let twice = problems(Self.config("  - {id: a, kind: clients, role: media}\n  - {id: b, kind: clients, role: media}"))
        #expect(twice.count == 2 && twice.allSatisfy { $0.contains("already takes role 'media'") }, "\(twice)")
        let bare = problems(Self.config("  - {id: a, kind: clients}\n  - {id: b, kind: clients}"))
        #expect(bare.count == 2 && bare.allSatisfy { $0.contains("only one `clients` node may go without `role`") }, "\(bare)")
        let badName = problems(Self.config("  - {id: a, kind: clients, role: [media]}\n  - {id: b, kind: clients}"))
        #expect(badName.count == 1 && badName[0].hasPrefix("3:"), "\(badName)")
    }
}
