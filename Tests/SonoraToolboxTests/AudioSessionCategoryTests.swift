import Foundation
import SonoraCore
@testable import SonoraToolbox
import Testing

/// Categories, options and activation against a scripted backend (no device involved).
@Suite("Audio session: categories and activation")
struct AudioSessionCategoryTests {
    @Test("every category with the options it may have reads back as set; names match the policy's wire names")
    func categoriesRoundTrip() throws {
        let session = AudioSession(backend: ScriptedSessionBackend())
        #expect(session.category == .soloAmbient && session.categoryOptions == [] && !session.isActive)
        let allowed: [AudioSessionCategory: [AudioSessionCategoryOptions]] = [
            .ambient: [[], [.mixWithOthers], [.duckOthers]],
            .soloAmbient: [[], [.duckOthers]],
            .playback: [[], [.mixWithOthers], [.duckOthers], [.mixWithOthers, .duckOthers]],
            .record: [[]],
            .playAndRecord: [[], [.defaultToSpeaker], [.mixWithOthers, .defaultToSpeaker], [.duckOthers, .mixWithOthers, .defaultToSpeaker]],
            .audioProcessing: [[]],
        ]
        for category in AudioSessionCategory.allCases {
            for options in allowed[category]! {
                try session.setCategory(category, options: options)
                #expect(session.category == category && session.categoryOptions == options)
                #expect(AudioSessionCategoryOptions(names: options.names) == options)
                #expect(AudioSessionCategory(rawValue: category.rawValue) == category)
            }
        }
        #expect(AudioSessionCategory.allCases.map(\.rawValue) == ["ambient", "soloAmbient", "playback", "record", "playAndRecord", "audioProcessing"])
        #expect(AudioSessionCategoryOptions([.mixWithOthers, .duckOthers, .defaultToSpeaker]).names == ["mixWithOthers", "duckOthers", "defaultToSpeaker"])
        #expect(AudioSessionCategoryOptions(names: ["loud"]) == nil)
    }

    @Test("options a category cannot have are refused with -50, naming them; the category stays")
    func badOptions() throws {
        let session = AudioSession(backend: ScriptedSessionBackend())
        try session.setCategory(.playback)
        for (category, options) in [(AudioSessionCategory.playback, AudioSessionCategoryOptions.defaultToSpeaker), (.record, .mixWithOthers), (.audioProcessing, .duckOthers)] {
            let error = #expect(throws: AudioError.self) { try session.setCategory(category, options: options) }
            #expect(error?.code == .parameterError)
            #expect(error?.message.contains(options.names[0]) == true, "\(error?.message ?? "")")
        }
        #expect(session.category == .playback && session.categoryOptions == [])
    }

    @Test("a refused activation throws Core Audio's session status and names the holder; the session stays inactive")
    func refusedActivation() throws {
        let backend = ScriptedSessionBackend()
        let session = AudioSession(backend: backend)
        try session.setCategory(.playback, options: [.duckOthers])
        session.role = "media"
        backend.refusal = .sessionRefused(
            .sessionInsufficientPriority, reason: "role intercom (priority 30) is active and interrupts media",
            holder: AudioSessionHolder(pid: 4242, name: "intercom", role: "intercom"))
        let error = #expect(throws: AudioError.self) { try session.setActive(true) }
        #expect(error?.code == .sessionInsufficientPriority)
        #expect(error?.status == 0x2170_7269, "'!pri'")
        #expect(error?.code.description == "'!pri'")
        #expect(error?.message.contains("the device is held by 'intercom' (pid 4242, role intercom)") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("AudioSession.setActive(true): playback on scripted") == true, "\(error?.message ?? "")")
        #expect(!session.isActive)
        #expect(backend.requests == [AudioSessionActivationRequest(category: .playback, options: [.duckOthers], role: "media")])

        backend.refusal = nil
        try session.setActive(true)
        #expect(session.isActive)
        try session.setActive(false, options: .notifyOthersOnDeactivation)
        try session.setActive(true)
        try session.setActive(false)
        #expect(!session.isActive && backend.deactivations == [true, false])
    }

    @Test("a category change while active asks the backend again (a refusal keeps the old one) and is a route change 'category change'")
    func categoryChangeWhileActive() throws {
        let backend = ScriptedSessionBackend()
        let session = AudioSession(backend: backend)
        let events = SessionEvents()
        session.addListener { events.add(SessionEvents.describe($0)) }
        try session.setActive(true)
        try session.setCategory(.playAndRecord, options: [.defaultToSpeaker])
        backend.refusal = .sessionRefused(.sessionIncompatibleCategory, reason: "record is not allowed", holder: nil)
        let error = #expect(throws: AudioError.self) { try session.setCategory(.record) }
        #expect(error?.code == .sessionIncompatibleCategory)
        #expect(session.category == .playAndRecord)
        session.waitForDelivery()
        #expect(events.all == ["route categoryChange [] → []"])
        #expect(backend.requests.map(\.category) == [.soloAmbient, .playAndRecord, .record])
    }

    @Test("a backend can be replaced only while the session is inactive ('!act'), and the old one speaks no more")
    func replaceBackend() throws {
        let first = ScriptedSessionBackend(), second = ScriptedSessionBackend()
        let session = AudioSession(backend: first)
        try session.setActive(true)
        let error = #expect(throws: AudioError.self) { try session.setBackend(second) }
        #expect(error?.code == .sessionNotActive)
        try session.setActive(false)
        try session.setBackend(second)
        let events = SessionEvents()
        session.addListener { events.add(SessionEvents.describe($0)) }
        try session.setActive(true)
        first.send(.duck(AudioSessionDuck(gainDB: -12, isActive: true)))
        second.send(.duck(AudioSessionDuck(gainDB: -6, isActive: true)))
        session.waitForDelivery()
        #expect(events.all == ["duck -6.0 true"])
    }

    @Test("a property without a listener in Core Audio is refused with 'pty?'")
    func unlistenable() throws {
        let session = AudioSession(backend: ScriptedSessionBackend())
        for property in AudioSessionProperty.allCases where !property.isListenable {
            let error = #expect(throws: AudioError.self) { try session.addPropertyListener(property) { _ in } }
            #expect(error?.code == .unsupportedProperty)
        }
        #expect(AudioSessionProperty.allCases.filter(\.isListenable).count == 7)
    }
}
