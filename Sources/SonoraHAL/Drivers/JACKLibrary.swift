import CJackLoader
import SonoraCore

/// libjack and libjacknet, opened on first use (`Sources/CJackLoader`): a process that never
/// opens a `jack:` or `netjack:` device does not map them.
enum JACKLibrary {
    /// Opens libjack, or says why it cannot be (`device`: the device name the error names).
    static func load(for device: String) throws(AudioError) {
        guard sonora_jack_load() == 0 else { return }
        throw AudioError(.badDevice, "'\(device)': JACK is not available: \(reason(sonora_jack_load_error())) (install libjack-jackd2-0, or pipewire-jack)")
    }

    /// Opens libjacknet (netjack2), or says why it cannot be.
    static func loadNet(for device: String) throws(AudioError) {
        guard sonora_jacknet_load() == 0 else { return }
        throw AudioError(.badDevice, "'\(device)': netjack2 is not available: \(reason(sonora_jacknet_load_error())) (install libjack-jackd2-0)")
    }

    private static func reason(_ text: UnsafePointer<CChar>?) -> String {
        text.map { String(cString: $0) } ?? "unknown reason"
    }
}
