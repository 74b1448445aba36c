# Doxygen input filter for poolkit's C headers (include/poolkit/*.h).
#
# The C headers use plain C comments, each written just before (or after, on
# the same line) what it documents. This filter makes Doxygen read them as
# documentation without changing a line count:
#   - the file's first comment becomes the file's documentation (@file);
#   - a comment that starts a line becomes a doc comment: "/*" -> "/**";
#   - a comment after code on the same line documents that code: "/**<".
# Comments already written for Doxygen ("/**", "/*!") are left alone.
BEGIN { seen_code = 0; in_file_comment = 0 }
{
    line = $0
    if (!seen_code && !in_file_comment && line ~ /^\/\*([^*!]|$)/) {
        sub(/^\/\*/, "/**", line)
        in_file_comment = 1
    } else if (line ~ /^[ \t]*\/\*([^*!]|$)/) {
        sub(/\/\*/, "/**", line)
    } else if (line ~ /^[ \t]*[^ \t\/*]/ && match(line, /[ \t]\/\*([^*!]|$)/)) {
        line = substr(line, 1, RSTART) "/**<" substr(line, RSTART + 3)
    }
    if (in_file_comment && line ~ /\*\//) {
        sub(/\*\//, "@file */", line)
        in_file_comment = 0
        seen_code = 1
    }
    if (line ~ /^[ \t]*[^ \t\/*]/) seen_code = 1
    print line
}
