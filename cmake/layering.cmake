# One CMake library per folder, and a check that keeps the layers honest.
#
#   anchorage_library(<name> [USES <layer>...] [LINKS <target>...])
#
# builds the folder's .cpp files into anchorage_<name> (an interface library when there are
# none; a nested layer's "/" becomes "_": text/tokenizer builds anchorage_text_tokenizer), links
# the libraries of the layers it USES, and adds a build step that fails when one of the folder's
# files includes a project header from a folder it did not declare. A layer is
# named by its folder relative to the project root with "runtime/" dropped: core, io, model,
# engine, text/tokenizer, ..., plus kernels, protocol and actors.

function(anchorage_layer_folder out layer)
  if(layer STREQUAL "kernels" OR layer STREQUAL "protocol" OR layer STREQUAL "actors")
    set(${out} "${layer}" PARENT_SCOPE)
  else()
    set(${out} "runtime/${layer}" PARENT_SCOPE)
  endif()
endfunction()

function(anchorage_library name)
  cmake_parse_arguments(A "" "" "USES;LINKS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  file(GLOB headers CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.hpp)
  string(REPLACE "/" "_" target_name "${name}")
  set(target anchorage_${target_name})
  set(deps)
  set(allowed)
  file(RELATIVE_PATH own ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  list(APPEND allowed ${own})
  foreach(layer IN LISTS A_USES)
    string(REPLACE "/" "_" layer_target "${layer}")
    list(APPEND deps anchorage_${layer_target})
    anchorage_layer_folder(folder ${layer})
    list(APPEND allowed ${folder})
  endforeach()
  if(sources)
    add_library(${target} STATIC ${sources})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(${target} PUBLIC ${deps} ${A_LINKS})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${target} INTERFACE ${deps} ${A_LINKS})
  endif()
  anchorage_check_layers(${target} "${allowed}" ${sources} ${headers})
endfunction()

# A build step (re-run when one of the files changes) that fails when a file includes a project
# header outside `allowed` (folders relative to the project root).
function(anchorage_check_layers target allowed)
  set(files ${ARGN})
  set(stamp ${CMAKE_CURRENT_BINARY_DIR}/${target}.layers)
  string(REPLACE ";" "," allowed_arg "${allowed}")
  string(REPLACE ";" "," files_arg "${files}")
  add_custom_command(
    OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR} -DTARGET=${target} -DALLOWED=${allowed_arg}
            -DFILES=${files_arg} -DSTAMP=${stamp} -P ${PROJECT_SOURCE_DIR}/cmake/check_layers.cmake
    DEPENDS ${files} ${PROJECT_SOURCE_DIR}/cmake/check_layers.cmake
    COMMENT "Checking the includes of ${target}"
    VERBATIM)
  add_custom_target(${target}_layers DEPENDS ${stamp})
  add_dependencies(${target} ${target}_layers)
endfunction()
