
tiny"
€Û*HhH