extension BuildContext {
    /// What of `session:` depends on this machine, checked before a run: the socket's path
    /// as the control socket's is (only a stale socket would be replaced), not the control
    /// socket itself, and a group that exists.
    mutating func checkSession() {
        guard let session = configuration.session else { return }
        let sectionLocation = session.location ?? fileLocation
        if let path = configuration.sessionSocketPath {
            let location = session.socketLocation ?? sectionLocation
            // The server makes a missing last folder (as systemd's RuntimeDirectory= does for
            // the service): /run/sonora on a machine where the service has not run yet.
            if let problem = ControlSocketPath.problem(forFolderMadeIfMissing: path) {
                error(location, "session.socket: \(problem)")
            } else if path == configuration.socketPath {
                error(location, "session.socket is the control socket's path (\(path)); give each its own")
            }
        }
        if let group = session.group, SessionGroup.id(of: group) == nil {
            error(session.groupLocation ?? sectionLocation, "session.group: no group '\(Diagnostic.excerpt(group))' on this machine (`getent group` lists them)")
        }
    }
}
