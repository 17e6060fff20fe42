#include "runtime/agent/mime.h"

#include <cctype>
#include <string>

namespace sandbox::agent {

namespace {

struct MimeEntry {
  std::string_view extension;  // lower case, without the dot
  std::string_view type;
};

constexpr MimeEntry kMimeTypes[] = {
    {"png", "image/png"},
    {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},
    {"gif", "image/gif"},
    {"webp", "image/webp"},
    {"bmp", "image/bmp"},
    {"svg", "image/svg+xml"},
    {"ico", "image/vnd.microsoft.icon"},
    {"tif", "image/tiff"},
    {"tiff", "image/tiff"},
    {"pdf", "application/pdf"},
    {"txt", "text/plain"},
    {"log", "text/plain"},
    {"out", "text/plain"},
    {"csv", "text/csv"},
    {"tsv", "text/tab-separated-values"},
    {"md", "text/markdown"},
    {"html", "text/html"},
    {"htm", "text/html"},
    {"css", "text/css"},
    {"js", "text/javascript"},
    {"py", "text/x-python"},
    {"sh", "text/x-shellscript"},
    {"sql", "application/sql"},
    {"tex", "application/x-tex"},
    {"json", "application/json"},
    {"jsonl", "application/jsonl"},
    {"ndjson", "application/x-ndjson"},
    {"ipynb", "application/x-ipynb+json"},
    {"geojson", "application/geo+json"},
    {"xml", "application/xml"},
    {"yaml", "application/yaml"},
    {"yml", "application/yaml"},
    {"toml", "application/toml"},
    {"zip", "application/zip"},
    {"gz", "application/gzip"},
    {"tgz", "application/gzip"},
    {"bz2", "application/x-bzip2"},
    {"xz", "application/x-xz"},
    {"zst", "application/zstd"},
    {"tar", "application/x-tar"},
    {"parquet", "application/vnd.apache.parquet"},
    {"feather", "application/vnd.apache.arrow.file"},
    {"arrow", "application/vnd.apache.arrow.file"},
    {"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
    {"xls", "application/vnd.ms-excel"},
    {"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
    {"pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"},
    {"odt", "application/vnd.oasis.opendocument.text"},
    {"ods", "application/vnd.oasis.opendocument.spreadsheet"},
    {"wav", "audio/wav"},
    {"mp3", "audio/mpeg"},
    {"ogg", "audio/ogg"},
    {"flac", "audio/flac"},
    {"mp4", "video/mp4"},
    {"webm", "video/webm"},
    {"sqlite", "application/vnd.sqlite3"},
    {"db", "application/vnd.sqlite3"},
    {"h5", "application/x-hdf5"},
    {"hdf5", "application/x-hdf5"},
    {"wasm", "application/wasm"},
};

}  // namespace

std::string_view MimeTypeForPath(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == name.size()) {
    return "application/octet-stream";
  }
  std::string extension(name.substr(dot + 1));
  for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& entry : kMimeTypes) {
    if (entry.extension == extension) return entry.type;
  }
  return "application/octet-stream";
}

}  // namespace sandbox::agent
