/// Port roles from an ALSA card's control element names ("Headphone", "Speaker", "Mic" …,
/// as snd_mixer and snd_ctl name them: HDA codecs, USB headsets, Raspberry Pi HATs). Pure
/// naming logic, so it is tested on element-name lists (the build machine has no card).
public enum AudioSessionPortRoles {
    /// The output and input roles a card's elements name, in a fixed order, without repeats.
    /// Jack-detection switches ("Headphone Jack", "Headset Mic Jack") say which side is
    /// plugged in: given `plugged` (their values), a plugged headphone jack makes the output
    /// the headphones alone (the speaker is muted by the codec), an unplugged one drops them.
    public static func roles(forElements names: [String], plugged: [String: Bool] = [:]) -> (outputs: [AudioSessionPortRole], inputs: [AudioSessionPortRole]) {
        var outputs: [AudioSessionPortRole] = []
        var inputs: [AudioSessionPortRole] = []
        func add(_ role: AudioSessionPortRole, to list: inout [AudioSessionPortRole]) {
            if !list.contains(role) { list.append(role) }
        }
        for name in names {
            let lower = name.lowercased()
            if lower.hasSuffix(" jack") { continue }  // detection switches only; their value counts below
            if lower.contains("headphone") || lower.hasPrefix("hp ") || lower == "hp" {
                add(.headphones, to: &outputs)
            } else if lower.contains("speaker") || lower.hasPrefix("spk") {
                add(.speaker, to: &outputs)
            } else if lower.contains("hdmi") || lower.contains("iec958") {
                add(.hdmi, to: &outputs)
            } else if lower.contains("headset mic") {
                add(.headsetMicrophone, to: &inputs)
            } else if lower.contains("mic") {
                add(.microphone, to: &inputs)
            } else if lower.hasPrefix("line out") || lower == "line" || lower.hasPrefix("line playback") {
                add(.lineOut, to: &outputs)
            } else if lower.hasPrefix("line in") || lower.hasPrefix("line capture") {
                add(.lineIn, to: &inputs)
            }
        }
        if let headphones = plugged.first(where: { $0.key.lowercased().hasPrefix("headphone") })?.value {
            if headphones {
                outputs = [.headphones]
            } else {
                outputs.removeAll { $0 == .headphones }
            }
        }
        if let headset = plugged.first(where: { $0.key.lowercased().hasPrefix("headset mic") })?.value {
            if headset {
                inputs = [.headsetMicrophone]
            } else {
                inputs.removeAll { $0 == .headsetMicrophone }
            }
        }
        return (outputs, inputs)
    }

    /// The card an ALSA PCM name opens (`hw:1`, `plughw:CARD=0,DEV=0`, `default` → 0), nil
    /// for names no card's number shows in (a plugin of Sonora's, a named card).
    public static func cardIndex(ofPCM name: String) -> Int? {
        let name = name.hasPrefix("alsa:") ? String(name.dropFirst(5)) : name
        if name == "default" || name == "sysdefault" { return 0 }
        guard let colon = name.firstIndex(of: ":") else { return nil }
        let kind = name[..<colon]
        guard ["hw", "plughw", "sysdefault", "front", "dmix", "dsnoop"].contains(String(kind)) else { return nil }
        var argument = name[name.index(after: colon)...]
        if argument.hasPrefix("CARD=") { argument = argument.dropFirst(5) }
        let digits = argument.prefix { $0.isNumber }
        return Int(digits)
    }
}
