# Helpers of the scripts that embed files in the binary (embed_arch.cmake, embed_text.cmake).

# embed_bytes(INPUT BYTES_VAR SIZE_VAR): the file's bytes as C array initializers ("0x7b,"),
# 16 to a line, and their count.
function(embed_bytes input bytes_var size_var)
  file(READ "${input}" hex HEX)
  string(LENGTH "${hex}" hex_length)
  math(EXPR size "${hex_length} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  # 16 bytes a line (CMake's regular expressions have no {n}).
  string(REPEAT "0x[0-9a-f][0-9a-f]," 16 line_pattern)
  string(REGEX REPLACE "(${line_pattern})" "\\1\n    " bytes "${bytes}")
  set(${bytes_var} "${bytes}" PARENT_SCOPE)
  set(${size_var} "${size}" PARENT_SCOPE)
endfunction()

# write_if_changed(OUTPUT TEXT): rewrites OUTPUT only when TEXT differs, so that an unchanged
# input rebuilds nothing.
function(write_if_changed output text)
  if(EXISTS "${output}")
    file(READ "${output}" old)
    if(old STREQUAL text)
      return()
    endif()
  endif()
  file(WRITE "${output}" "${text}")
endfunction()
