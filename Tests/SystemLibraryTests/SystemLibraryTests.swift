import CALSA
import CJack
import CLilv
import CSndfile
import CSoxr
import Testing

/// The C libraries the package declares are found through pkg-config, link, and answer.
@Suite("System libraries")
struct SystemLibraryTests {
    @Test func alsaAnswersItsVersion() {
        let version = String(cString: snd_asoundlib_version())
        #expect(version.split(separator: ".").count >= 3, "alsa-lib \(version)")
    }

    @Test func libsndfileAnswersItsVersion() {
        #expect(String(cString: sf_version_string()).hasPrefix("libsndfile-1."))
    }

    @Test func soxrAnswersItsVersion() {
        #expect(String(cString: soxr_version()).hasPrefix("libsoxr-0."))
    }

    @Test func lilvCreatesAWorld() {
        let world = lilv_world_new()
        #expect(world != nil)
        let uri = lilv_new_uri(world, "http://lv2plug.in/ns/lv2core#AudioPort")
        #expect(String(cString: lilv_node_as_uri(uri)) == "http://lv2plug.in/ns/lv2core#AudioPort")
        lilv_node_free(uri)
        lilv_world_free(world)
    }

    @Test func jackRingBufferWorks() {
        let ring = jack_ringbuffer_create(64)
        defer { jack_ringbuffer_free(ring) }
        var bytes: [CChar] = [1, 2, 3]
        #expect(jack_ringbuffer_write(ring, &bytes, 3) == 3)
        #expect(jack_ringbuffer_read_space(ring) == 3)
    }
}
