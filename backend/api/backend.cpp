// Anchors the Backend meta-object (moc output) in this shared library.
#include "backend.h"
