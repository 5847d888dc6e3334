import CALSA

/// Reads an ALSA card's control elements (snd_ctl) for the session's route roles, input
/// availability and output volume. Opens nothing when the machine has no card.
enum ALSACardControls {
    /// The numbers of the cards present (snd_card_next).
    static func cards() -> [Int] {
        var cards: [Int] = []
        var card: Int32 = -1
        while snd_card_next(&card) == 0, card >= 0, cards.count < 32 { cards.append(Int(card)) }
        return cards
    }

    /// Every element's name on `card`, and the boolean jack-detection switches' values.
    static func elements(card: Int) -> (names: [String], plugged: [String: Bool])? {
        var ctl: OpaquePointer?
        guard snd_ctl_open(&ctl, "hw:\(card)", Int32(SND_CTL_NONBLOCK)) == 0, let ctl else { return nil }
        defer { snd_ctl_close(ctl) }
        var list: OpaquePointer?
        guard snd_ctl_elem_list_malloc(&list) == 0, let list else { return nil }
        defer { snd_ctl_elem_list_free(list) }
        guard snd_ctl_elem_list(ctl, list) == 0 else { return nil }
        let count = snd_ctl_elem_list_get_count(list)
        guard snd_ctl_elem_list_alloc_space(list, count) == 0 else { return nil }
        defer { snd_ctl_elem_list_free_space(list) }
        guard snd_ctl_elem_list(ctl, list) == 0 else { return nil }
        var names: [String] = []
        var plugged: [String: Bool] = [:]
        for index in 0..<snd_ctl_elem_list_get_used(list) {
            guard let cName = snd_ctl_elem_list_get_name(list, index) else { continue }
            let name = String(cString: cName)
            names.append(name)
            guard name.hasSuffix(" Jack") else { continue }
            var value: OpaquePointer?
            guard snd_ctl_elem_value_malloc(&value) == 0, let value else { continue }
            defer { snd_ctl_elem_value_free(value) }
            var id: OpaquePointer?
            guard snd_ctl_elem_id_malloc(&id) == 0, let id else { continue }
            defer { snd_ctl_elem_id_free(id) }
            snd_ctl_elem_list_get_id(list, index, id)
            snd_ctl_elem_value_set_id(value, id)
            if snd_ctl_elem_read(ctl, value) == 0 { plugged[name] = snd_ctl_elem_value_get_boolean(value, 0) != 0 }
        }
        return (names, plugged)
    }

    /// Whether any card has a capture PCM device.
    static func hasCapture() -> Bool {
        for card in cards() {
            var ctl: OpaquePointer?
            guard snd_ctl_open(&ctl, "hw:\(card)", Int32(SND_CTL_NONBLOCK)) == 0, let ctl else { continue }
            defer { snd_ctl_close(ctl) }
            var info: OpaquePointer?
            guard snd_pcm_info_malloc(&info) == 0, let info else { continue }
            defer { snd_pcm_info_free(info) }
            var device: Int32 = -1
            while snd_ctl_pcm_next_device(ctl, &device) == 0, device >= 0 {
                snd_pcm_info_set_device(info, UInt32(device))
                snd_pcm_info_set_subdevice(info, 0)
                snd_pcm_info_set_stream(info, SND_PCM_STREAM_CAPTURE)
                if snd_ctl_pcm_info(ctl, info) == 0 { return true }
            }
        }
        return false
    }

    /// The first card's master playback volume as 0…1 (its "Master", else "PCM", else
    /// "Speaker" / "Headphone" simple mixer element), nil without a card or such a control.
    static func outputVolume() -> Float? {
        guard let card = cards().first else { return nil }
        var mixer: OpaquePointer?
        guard snd_mixer_open(&mixer, 0) == 0, let mixer else { return nil }
        defer { snd_mixer_close(mixer) }
        guard snd_mixer_attach(mixer, "hw:\(card)") == 0,
              snd_mixer_selem_register(mixer, nil, nil) == 0,
              snd_mixer_load(mixer) == 0 else { return nil }
        for wanted in ["Master", "PCM", "Speaker", "Headphone"] {
            var element = snd_mixer_first_elem(mixer)
            while let current = element {
                defer { element = snd_mixer_elem_next(current) }
                guard let cName = snd_mixer_selem_get_name(current), String(cString: cName) == wanted,
                      snd_mixer_selem_has_playback_volume(current) != 0 else { continue }
                var low = 0, high = 0, value = 0
                snd_mixer_selem_get_playback_volume_range(current, &low, &high)
                snd_mixer_selem_get_playback_volume(current, SND_MIXER_SCHN_FRONT_LEFT, &value)
                guard high > low else { continue }
                return Float(value - low) / Float(high - low)
            }
        }
        return nil
    }

    /// The roles of the ALSA PCM `name`: its card's elements, nil when its card is unknown or absent.
    static func roles(ofPCM name: String) -> (outputs: [AudioSessionPortRole], inputs: [AudioSessionPortRole])? {
        guard let card = AudioSessionPortRoles.cardIndex(ofPCM: name), cards().contains(card),
              let elements = elements(card: card) else { return nil }
        return AudioSessionPortRoles.roles(forElements: elements.names, plugged: elements.plugged)
    }
}
