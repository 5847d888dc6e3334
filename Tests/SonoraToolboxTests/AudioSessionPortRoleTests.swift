@testable import SonoraToolbox
import Testing

/// Route roles from ALSA control names. The build machine has no sound card, so the naming
/// logic is tested on the element lists real cards show (snd_ctl and snd_mixer names).
@Suite("Audio session: port roles from ALSA controls")
struct AudioSessionPortRoleTests {
    @Test("an HDA laptop codec: headphones and speaker out, microphone in; the jack switch picks the side")
    func hdaCodec() {
        let ctl = ["Master Playback Volume", "Master Playback Switch", "Headphone Playback Volume", "Headphone Playback Switch",
                   "Speaker Playback Volume", "Speaker Playback Switch", "Capture Volume", "Mic Boost Volume",
                   "Internal Mic Boost Volume", "Headphone Jack", "Mic Jack", "Internal Mic Phantom Jack"]
        let roles = AudioSessionPortRoles.roles(forElements: ctl)
        #expect(roles.outputs == [.headphones, .speaker])
        #expect(roles.inputs == [.microphone])
        #expect(AudioSessionPortRoles.roles(forElements: ctl, plugged: ["Headphone Jack": true]).outputs == [.headphones])
        #expect(AudioSessionPortRoles.roles(forElements: ctl, plugged: ["Headphone Jack": false]).outputs == [.speaker])
    }

    @Test("simple-mixer names, a USB headset, HDMI, a line-level HAT; a card that names nothing")
    func otherCards() {
        #expect(AudioSessionPortRoles.roles(forElements: ["Master", "Headphone", "Speaker", "Mic"]).outputs == [.headphones, .speaker])
        let headset = AudioSessionPortRoles.roles(forElements: ["PCM Playback Volume", "Headphone Playback Switch", "Headset Mic Capture Volume", "Headset Mic Jack"], plugged: ["Headset Mic Jack": true])
        #expect(headset.outputs == [.headphones] && headset.inputs == [.headsetMicrophone])
        #expect(AudioSessionPortRoles.roles(forElements: ["IEC958 Playback Switch", "HDMI Jack"]).outputs == [.hdmi])
        let hat = AudioSessionPortRoles.roles(forElements: ["Line Out Playback Volume", "Line In Capture Switch"])
        #expect(hat.outputs == [.lineOut] && hat.inputs == [.lineIn])
        let none = AudioSessionPortRoles.roles(forElements: ["PCM Playback Volume", "Digital Playback Volume"])
        #expect(none.outputs.isEmpty && none.inputs.isEmpty)
    }

    @Test("the card an ALSA PCM name opens")
    func cardIndex() {
        #expect(AudioSessionPortRoles.cardIndex(ofPCM: "hw:1") == 1)
        #expect(AudioSessionPortRoles.cardIndex(ofPCM: "plughw:CARD=2,DEV=0") == 2)
        #expect(AudioSessionPortRoles.cardIndex(ofPCM: "alsa:hw:3,0") == 3)
        #expect(AudioSessionPortRoles.cardIndex(ofPCM: "default") == 0)
        #expect(AudioSessionPortRoles.cardIndex(ofPCM: "hw:CARD=PCH") == nil)
        #expect(AudioSessionPortRoles.cardIndex(ofPCM: "sonoraloop") == nil)
    }
}
