import Foundation
import SonoraCore
import SonoraPipeline
import Synchronization
import Testing

/// Records every call the coordinator makes, in order.
final class RecordingEffectTarget: SessionEffectTarget {
    enum Call: Equatable, CustomStringConvertible {
        case gain(pid: Int32, gain: Float, rampFrames: Int)
        case notice(SessionNotice, pid: Int32)

        var description: String {
            switch self {
            case .gain(let pid, let gain, let frames): "setGain(\(pid), \(gain), \(frames))"
            case .notice(let notice, let pid): "deliver(\(notice), \(pid))"
            }
        }
    }

    private let recorded = Mutex<[Call]>([])

    func setGain(pid: Int32, gain: Float, rampFrames: Int) { recorded.withLock { $0.append(.gain(pid: pid, gain: gain, rampFrames: rampFrames)) } }
    func deliver(_ notice: SessionNotice, toClient pid: Int32) { recorded.withLock { $0.append(.notice(notice, pid: pid)) } }

    /// The calls since the last `take()`.
    func take() -> [Call] { recorded.withLock { calls in defer { calls = [] }; return calls } }
}

/// -12 dB as a linear gain, as the coordinator computes it.
let minus12 = Float(pow(10, -12.0 / 20))

@Suite("SessionCoordinator: decisions carried out on the effect target")
struct SessionCoordinatorTests {
    let target = RecordingEffectTarget()
    let coordinator: SessionCoordinator

    init() {
        coordinator = SessionCoordinator(policy: testSessionPolicy, sampleRate: 48000, target: target)
        coordinator.attach(pid: 1, name: "player")
        coordinator.attach(pid: 2, name: "doorphone")
        coordinator.attach(pid: 3, name: "chime-alert")
    }

    @Test("intercom interrupts media: fade out, then the notice; ends: fade in, then should resume")
    func interruption() throws {
        let media = try coordinator.activate(pid: 1, category: "playback", options: [], role: nil)
        #expect(media.role == "media" && media.priority == 10 && media.gainDB == 0 && media.effects.isEmpty)
        #expect(target.take() == [])
        let intercom = try coordinator.activate(pid: 2, category: "playAndRecord", options: [], role: nil)
        #expect(intercom.role == "intercom" && intercom.effects == [.interrupt(pid: 1, fadeFrames: 1440)])
        #expect(target.take() == [.gain(pid: 1, gain: 0, rampFrames: 1440), .notice(.interruptionBegan, pid: 1)])
        coordinator.deactivate(pid: 2, notifyOthers: true)
        #expect(target.take() == [.gain(pid: 1, gain: 1, rampFrames: 1440), .notice(.interruptionEnded(shouldResume: true), pid: 1)])
    }

    @Test("alert ducks media with its attack and restores it with its release")
    func duck() throws {
        _ = try coordinator.activate(pid: 1, category: "playback", options: [], role: nil)
        _ = try coordinator.activate(pid: 3, category: "playback", options: [], role: "alert")
        #expect(target.take() == [.gain(pid: 1, gain: minus12, rampFrames: 2400), .notice(.duck(gainDB: -12, active: true), pid: 1)])
        coordinator.deactivate(pid: 3, notifyOthers: true)
        #expect(target.take() == [.gain(pid: 1, gain: 1, rampFrames: 14400), .notice(.duck(gainDB: 0, active: false), pid: 1)])
    }

    @Test("a ducked session interrupted stays silent when the duck ends, and comes back at full level")
    func duckEndsDuringInterruption() throws {
        _ = try coordinator.activate(pid: 1, category: "playback", options: [], role: nil)
        _ = try coordinator.activate(pid: 3, category: "playback", options: [], role: "alert")
        _ = try coordinator.activate(pid: 2, category: "playAndRecord", options: [], role: nil)
        #expect(target.take() == [
            .gain(pid: 1, gain: minus12, rampFrames: 2400), .notice(.duck(gainDB: -12, active: true), pid: 1),
            .gain(pid: 1, gain: 0, rampFrames: 1440), .notice(.interruptionBegan, pid: 1),
        ])
        coordinator.deactivate(pid: 3, notifyOthers: true)
        #expect(target.take() == [.notice(.duck(gainDB: 0, active: false), pid: 1)])
        coordinator.deactivate(pid: 2, notifyOthers: true)
        #expect(target.take() == [.gain(pid: 1, gain: 1, rampFrames: 1440), .notice(.interruptionEnded(shouldResume: true), pid: 1)])
    }

    @Test("an interruption ending while a duck holds: media fades back in to the ducked level")
    func resumeDucked() throws {
        _ = try coordinator.activate(pid: 1, category: "playback", options: [], role: nil)
        _ = try coordinator.activate(pid: 3, category: "playback", options: [], role: "alert")
        _ = try coordinator.activate(pid: 2, category: "playAndRecord", options: [], role: nil)
        _ = target.take()
        coordinator.deactivate(pid: 2, notifyOthers: false)
        #expect(target.take() == [.gain(pid: 1, gain: minus12, rampFrames: 1440), .notice(.interruptionEnded(shouldResume: false), pid: 1)])
    }

    @Test("the interrupter's client dies: media fades in and is told it may resume")
    func detachedInterrupter() throws {
        _ = try coordinator.activate(pid: 1, category: "playback", options: [], role: nil)
        _ = try coordinator.activate(pid: 2, category: "playAndRecord", options: [], role: nil)
        _ = target.take()
        coordinator.detach(pid: 2)
        #expect(target.take() == [.gain(pid: 1, gain: 1, rampFrames: 1440), .notice(.interruptionEnded(shouldResume: true), pid: 1)])
        #expect(coordinator.status().map(\.pid) == [1, 3])
    }

    @Test("the ducker's client dies: media is restored")
    func detachedDucker() throws {
        _ = try coordinator.activate(pid: 1, category: "playback", options: [], role: nil)
        _ = try coordinator.activate(pid: 3, category: "playback", options: [], role: "alert")
        _ = target.take()
        coordinator.detach(pid: 3)
        #expect(target.take() == [.gain(pid: 1, gain: 1, rampFrames: 14400), .notice(.duck(gainDB: 0, active: false), pid: 1)])
    }

    @Test("a refused activation throws '!pri' naming the holder, and touches nothing")
    func refused() throws {
        _ = try coordinator.activate(pid: 2, category: "playAndRecord", options: [], role: nil)
        #expect(throws: AudioError.self) { try coordinator.activate(pid: 1, category: "playback", options: [], role: nil) }
        do {
            _ = try coordinator.activate(pid: 1, category: "playback", options: [], role: nil)
        } catch {
            #expect(error.code == .sessionInsufficientPriority)
            #expect(error.code.rawValue == 0x2170_7269)
            #expect(error.message.contains("pid 2 (doorphone) holds the audio as role intercom (priority 30)"), "\(error.message)")
        }
        #expect(target.take() == [])
        #expect(coordinator.status().first { $0.pid == 1 }?.active == false)
    }

    @Test("record refused with '!rec' when the role may not record; mayRecord says why")
    func recordRefused() throws {
        do {
            _ = try coordinator.activate(pid: 1, category: "record", options: [], role: "media")
            Issue.record("granted")
        } catch {
            #expect(error.code == .sessionCannotStartRecording && error.message.contains("may_record: false"))
        }
        _ = try coordinator.activate(pid: 1, category: "playback", options: [], role: nil)
        #expect(coordinator.mayRecord(pid: 1)?.contains("does not record") == true)
        #expect(coordinator.mayRecord(pid: 3) == nil)
    }

    @Test("names from the wire: unknown category, option, role refused with -50 and a suggestion")
    func unknownNames() {
        for (category, options, role, words) in [
            ("playbak", [String](), String?.none, ["unknown category 'playbak'", "did you mean 'playback'"]),
            ("playback", ["mixWithOther"], nil, ["unknown option 'mixWithOther'", "did you mean 'mixWithOthers'"]),
            ("playback", [], "intercon", ["unknown role 'intercon'", "did you mean 'intercom'"]),
        ] {
            do {
                _ = try coordinator.activate(pid: 1, category: category, options: options, role: role)
                Issue.record("granted \(category)")
            } catch {
                #expect(error.code == .parameterError)
                for word in words { #expect(error.message.contains(word), "\(error.message)") }
            }
        }
        #expect(target.take() == [])
    }

    @Test("status: every client with its role, category, options, active, duck and interruption; Codable")
    func status() throws {
        _ = try coordinator.activate(pid: 1, category: "playback", options: [], role: nil)
        _ = try coordinator.activate(pid: 3, category: "playback", options: ["duckOthers"], role: "alert")
        _ = try coordinator.activate(pid: 2, category: "playAndRecord", options: ["defaultToSpeaker"], role: nil)
        let status = coordinator.status()
        #expect(status.map(\.pid) == [1, 2, 3])
        let media = try #require(status.first)
        #expect(media.role == "media" && media.category == .playback && media.active && media.interrupted && media.interruptedBy == [2] && media.duckedDB == -12)
        let alert = try #require(status.last)
        #expect(alert.options == ["mixWithOthers", "duckOthers"] && alert.duckedDB == nil && !alert.interrupted)
        let data = try JSONEncoder().encode(status)
        #expect(try JSONDecoder().decode([SessionClientStatus].self, from: data) == status)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("\"category\":\"playAndRecord\"") && text.contains("\"duckedDB\":-12"))
    }

    @Test("the coordinator's sample rate sets the ramps")
    func sampleRate() throws {
        let target = RecordingEffectTarget()
        let coordinator = SessionCoordinator(policy: testSessionPolicy, sampleRate: 44100, target: target)
        coordinator.attach(pid: 1, name: "player")
        coordinator.attach(pid: 2, name: "doorphone")
        _ = try coordinator.activate(pid: 1, category: "playback", options: [], role: nil)
        _ = try coordinator.activate(pid: 2, category: "playAndRecord", options: [], role: nil)
        #expect(target.take() == [.gain(pid: 1, gain: 0, rampFrames: 1323), .notice(.interruptionBegan, pid: 1)])
    }

    @Test("requests from many threads at once: every effect once, in a consistent order, nothing left over")
    func concurrent() async throws {
        let target = RecordingEffectTarget()
        let coordinator = SessionCoordinator(policy: testSessionPolicy, sampleRate: 48000, target: target)
        coordinator.attach(pid: 1, name: "player")
        _ = try coordinator.activate(pid: 1, category: "playback", options: [], role: nil)
        await withTaskGroup(of: Void.self) { group in
            for pid in Int32(10)..<Int32(42) {
                group.addTask {
                    coordinator.attach(pid: pid, name: "alert-\(pid)")
                    _ = try? coordinator.activate(pid: pid, category: "playback", options: [], role: "alert")
                    coordinator.deactivate(pid: pid, notifyOthers: true)
                    coordinator.detach(pid: pid)
                }
            }
        }
        let calls = target.take()
        // Media was ducked and restored as the alerts came and went; it ends at full level, not ducked.
        #expect(calls.last == .notice(.duck(gainDB: 0, active: false), pid: 1))
        #expect(calls.filter { $0 == .notice(.duck(gainDB: -12, active: true), pid: 1) }.count
            == calls.filter { $0 == .notice(.duck(gainDB: 0, active: false), pid: 1) }.count)
        #expect(coordinator.status().map(\.pid) == [1])
        #expect(coordinator.status().first?.duckedDB == nil)
    }
}
