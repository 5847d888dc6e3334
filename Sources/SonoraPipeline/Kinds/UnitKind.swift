import SonoraCore
import SonoraUnits

extension NodeKind {
    /// A registered audio unit that needs no options of its own (`GraphicEQ`, `Gain` …).
    public static func unit(_ component: AudioComponentRegistry.Component, aliases: [String] = []) -> NodeKind {
        let description = component.description
        return NodeKind(name: component.name, aliases: aliases, summary: component.summary) { build in
            do {
                return try AudioComponentRegistry.shared.instantiate(description)
            } catch {
                build.error(build.spec.kindLocation, "node '\(build.spec.id)': \((error as? AudioError)?.message ?? "\(error)")")
                return nil
            }
        }
    }
}
