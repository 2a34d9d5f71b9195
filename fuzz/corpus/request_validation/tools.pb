
tinyŒ

userWeather?
0
	assistant#
c1get_weather{"city": "Rome"}

toolsunny"c1$
get_weatherd{"type": "object"}get_weather 