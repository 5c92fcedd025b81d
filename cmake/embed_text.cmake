# cmake -DIN=file -DOUT=file.inc -P embed_text.cmake
# Writes IN's bytes as the body of a C++ array initialiser ("0x3c, 0x21, ..."), for a file built
# into the binary (runtime/dashboard): no delimiter or length limit of a string literal to mind.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],0x[0-9a-f][0-9a-f],)" "\\1\n" body "${body}")
file(WRITE ${OUT}.tmp "${body}\n")
file(RENAME ${OUT}.tmp ${OUT})
