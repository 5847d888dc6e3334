import Glibc
import SonoraCore

/// Markers and loops in AIFF/AIFC and CAF, which Sonora reads and writes itself
/// (libsndfile drops them): read by walking the chunks once the file is open,
/// written by appending chunks to the finished temporary file before its rename.
extension AudioFile {
    var keepsOwnMarkers: Bool { fileType == .aiff || fileType == .aifc || fileType == .caf }

    /// Reads the marker chunks of an AIFF/AIFC/CAF file; a truncated or lying one is an error naming the file.
    func readContainerMarkers() throws(AudioError) {
        guard keepsOwnMarkers, let directory = ChunkDirectory(path: path) else { return }
        (containerMarkers, containerLoops) = directory.isCAF ? try CAFMarkers.read(directory) : try AIFFMarkers.read(directory)
    }

    func setContainerMarkers(_ markers: [AudioFileMarker], loops: [AudioFileLoop]) throws(AudioError) {
        guard isBeingCreated else {
            throw AudioError(.unsupportedProperty, "\(path): markers and loops can be set only on a file being created")
        }
        if let problem = fileType == .caf ? CAFMarkers.problem(markers: markers, loops: loops) : AIFFMarkers.problem(markers: markers, loops: loops) {
            throw AudioError(.unsupportedProperty, "\(path): \(problem)")
        }
        containerMarkers = markers
        containerLoops = loops
        containerMarkersSet = true
    }

    /// Appends the marker chunks to the finished file at `temporary` and, for AIFF,
    /// grows the FORM size to cover them.
    func appendContainerMarkers(to temporary: String) throws(AudioError) {
        guard keepsOwnMarkers, containerMarkersSet, !containerMarkers.isEmpty || !containerLoops.isEmpty else { return }
        let isCAF = fileType == .caf
        var bytes = isCAF ? CAFMarkers.chunks(markers: containerMarkers, loops: containerLoops)
            : AIFFMarkers.chunks(markers: containerMarkers, loops: containerLoops)
        let descriptor = Glibc.open(temporary, O_RDWR)
        guard descriptor >= 0 else { throw AudioError(.filePermission, "\(path): cannot reopen to add markers: \(String(cString: strerror(errno)))") }
        defer { Glibc.close(descriptor) }
        let end = lseek(descriptor, 0, SEEK_END)
        // IFF chunks start at even offsets: the last chunk's pad byte may be missing.
        if !isCAF && end % 2 == 1 { bytes.insert(0, at: 0) }
        let total = Int64(end) + Int64(bytes.count)
        guard isCAF || total - 8 <= Int64(UInt32.max) else {
            throw AudioError(.doesNotAllow64BitDataSize, "\(path): the markers would take the AIFF file past 4 GiB")
        }
        let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw AudioError(.unspecified, "\(path): cannot write the marker chunks: \(String(cString: strerror(errno)))") }
        if !isCAF {
            let size = UInt32(total - 8)
            let field = [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
            guard field.withUnsafeBytes({ pwrite(descriptor, $0.baseAddress, 4, 4) }) == 4 else {
                throw AudioError(.unspecified, "\(path): cannot update the FORM size: \(String(cString: strerror(errno)))")
            }
        }
    }
}
