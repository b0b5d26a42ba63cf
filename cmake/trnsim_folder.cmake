# A folder is a target (docs/architecture.md, "Folders"): trnsim_folder_library(NAME DEPS ...)
# builds every .cpp directly in the calling folder (not in its subfolders, which are targets of
# their own) into the static library NAME; a folder of headers only becomes an INTERFACE
# library. EXCLUDE names files of the folder that another target compiles; SOURCES adds
# generated ones. scripts/check-layers keeps the includes between folders pointing one way.
function(trnsim_folder_library name)
  cmake_parse_arguments(ARG "" "" "DEPS;SOURCES;EXCLUDE" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  foreach(x IN LISTS ARG_EXCLUDE)
    list(REMOVE_ITEM sources ${CMAKE_CURRENT_SOURCE_DIR}/${x})
  endforeach()
  list(APPEND sources ${ARG_SOURCES})
  if(sources)
    add_library(${name} STATIC ${sources})
    target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} INTERFACE ${ARG_DEPS})
  endif()
endfunction()
