// Writes the recipe's output with libarchive: the image layer (a rewrite of mmdebstrap's
// tarball) and the outer OCI image archive that holds it, readable as `oci-archive:` and
// `docker-archive:` (docker load of Docker 20.10 and later reads its manifest.json).
#pragma once

#include <string>

#include "rootfs/recipe/oci_documents.h"
#include "runtime/base/result.h"

namespace sandbox::rootfs {

// Reads a rootfs tarball from `tar_fd` (a pipe from mmdebstrap, or a file) and writes the
// layer to `layer_path` as an uncompressed tar, hashing it on the way (its hex is both the
// blob digest and the diff_id). Rewritten on the way: names lose their "./" prefix, the root
// entry is dropped; device nodes, fifos and sockets are dropped (a sandbox makes its own
// /dev); setuid/setgid bits, xattrs, ACLs, user and group names and atime/ctime are dropped,
// so nothing in the image can gain privileges and the bytes do not depend on the build host.
// The file is not synced: it is scratch space for WriteOciArchive, which syncs the archive.
Result<Blob> WriteLayerFromRootfsTar(int tar_fd, const std::string& layer_path);

struct OciArchiveParts {
  std::string config_json;
  std::string manifest_json;
  std::string index_json;
  std::string docker_manifest_json;
  std::string layer_path;  // the layer file written by WriteLayerFromRootfsTar
  Blob layer;
};

// Writes the archive to `path`: oci-layout, index.json, manifest.json, then blobs/sha256/
// with the config, the manifest and the layer last. The small documents come first so that a
// streaming reader knows the image before the layer's hundreds of megabytes arrive. Entries
// are owned by 0:0 with mtime 0, so the same inputs give the same bytes.
Status WriteOciArchive(const OciArchiveParts& parts, const std::string& path);

}  // namespace sandbox::rootfs
