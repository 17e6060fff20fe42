// UTF-8 as the rest of the code needs it: one decoder of sequences (RFC 3629, Table 3-7 of the
// Unicode standard: no overlong forms, no surrogates, nothing past U+10FFFF), and the repairs and
// cuts built on it. Everything that reads text someone else wrote (a client, a sandbox) and must
// pass it on as valid UTF-8 goes through here.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sandbox {

// The length of the well-formed UTF-8 sequence at text[pos] (1 for ASCII), or, when there is
// none, minus the length of its maximal invalid subpart (at least 1), as Unicode counts them
// for replacement. `pos` must be inside `text`.
int Utf8SequenceAt(std::string_view text, size_t pos);

// `text` with every invalid UTF-8 sequence replaced by U+FFFD (one per maximal invalid subpart,
// as Unicode recommends). Use it on anything that came out of a sandbox.
std::string ValidUtf8(std::string_view text);

// Cuts `text` to at most `max_bytes` without splitting a UTF-8 sequence.
std::string_view Utf8Prefix(std::string_view text, size_t max_bytes);
// The last at most `max_bytes` of `text`, starting on a UTF-8 sequence boundary.
std::string_view Utf8Suffix(std::string_view text, size_t max_bytes);

}  // namespace sandbox
