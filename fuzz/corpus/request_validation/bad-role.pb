
tiny
	
toolx